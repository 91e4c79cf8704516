/**
 * Webhook endpoints (unpinned keys only): create one (its signing secret shown once), and the
 * project's endpoints with cursor paging; each opens its own page (WebhookDetail.tsx).
 */
import { useState } from "preact/hooks"
import type { CreatedWebhookEndpoint } from "../../../client/index.ts"
import { type Client, isPinned, type Me, type Problem, toProblem } from "../api.ts"
import { PAGE_SIZE, usePaged } from "../data.ts"
import { Button } from "../ui/Button.tsx"
import { dropErrorOnEdit, ErrorNotice, PinnedNotice } from "../ui/Feedback.tsx"
import { Link } from "../ui/Link.tsx"
import { whenReplacing } from "../ui/LeaveGuard.tsx"
import { ListState } from "../ui/ListState.tsx"
import { ListTable } from "../ui/ListTable.tsx"
import { SecretOnce } from "../ui/SecretOnce.tsx"
import { UserText } from "../ui/Text.tsx"
import { Time } from "../ui/Time.tsx"
import { EventPicker } from "./EventPicker.tsx"

const CreateEndpoint = ({ client, onCreated }: { readonly client: Client; readonly onCreated: (endpoint: CreatedWebhookEndpoint) => void }) => {
  const [url, setUrl] = useState("")
  const [events, setEvents] = useState<ReadonlyArray<string>>(["execution.completed"])
  const [active, setActive] = useState(true)
  const [busy, setBusy] = useState(false)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  return (
    <section aria-labelledby="create-endpoint-title">
      <h2 id="create-endpoint-title">Add an endpoint</h2>
      <form
        {...dropErrorOnEdit(() => setProblem(undefined))}
        onSubmit={(event) => {
          event.preventDefault()
          if (busy || events.length === 0) return
          // Its secret would replace one still shown: that asks first (LeaveGuard.tsx).
          whenReplacing(async () => {
            setBusy(true)
            setProblem(undefined)
            try {
              const created = await client.webhooks.create({ url: url.trim(), events: [...events], active })
              setUrl("")
              onCreated(created)
            } catch (error) {
              setProblem(toProblem(error))
            } finally {
              setBusy(false)
            }
          })
        }}
      >
        <label for="endpoint-url">HTTPS URL</label>
        <input
          id="endpoint-url"
          type="url"
          required
          placeholder="https://example.com/hooks"
          value={url}
          onInput={(event) => setUrl(event.currentTarget.value)}
        />
        <EventPicker idPrefix="create-event" selected={events} onChange={setEvents} />
        <div class="check">
          <input id="endpoint-active" type="checkbox" checked={active} onChange={(event) => setActive(event.currentTarget.checked)} />
          <label for="endpoint-active">Active</label>
        </div>
        <Button type="submit" enabled={!busy && events.length > 0} why={events.length === 0 ? "Pick at least one event." : ""}>
          {busy ? "Creating…" : "Create endpoint"}
        </Button>
      </form>
      {problem === undefined ? null : <ErrorNotice problem={problem} />}
    </section>
  )
}

export const Webhooks = ({ client, me }: { readonly client: Client; readonly me: Me }) =>
  isPinned(me) ? <PinnedNotice what="webhook endpoints" userId={me.pinnedUserId ?? ""} /> : <Endpoints client={client} />

const Endpoints = ({ client }: { readonly client: Client }) => {
  const [created, setCreated] = useState<CreatedWebhookEndpoint | undefined>(undefined)
  const [refresh, setRefresh] = useState(0)
  const paged = usePaged(`webhooks:${refresh}`, async (cursor) => {
    const page = await client.webhooks.list({ limit: PAGE_SIZE, cursor })
    return { items: page.webhooks, nextCursor: page.nextCursor }
  })
  return (
    <>
      {created === undefined ? null : (
        <SecretOnce
          title={`Endpoint ${created.endpointId} created`}
          label="Signing secret"
          value={created.secret}
          onDone={() => setCreated(undefined)}
        >
          <p>
            <Link to={{ view: "webhook", endpointId: created.endpointId }}>Open the endpoint</Link> to edit it and follow its deliveries
            (this leaves the page, and the secret is not shown there: copy it first).
          </p>
        </SecretOnce>
      )}
      <CreateEndpoint
        client={client}
        onCreated={(endpoint) => {
          setCreated(endpoint)
          setRefresh((n) => n + 1)
        }}
      />
      <section aria-labelledby="endpoints-title">
        <div class="section-head">
          <h2 id="endpoints-title">Endpoints</h2>
          <Button enabled={!paged.busy} onPress={paged.reload}>Refresh</Button>
        </div>
        <ListState paged={paged} what="endpoints" empty="No webhook endpoints yet.">
          {(endpoints) => (
            <ListTable
              label="Webhook endpoints"
              columns={["URL", "Events", "Active", "Secret prefix", "Created"]}
            >
              {endpoints.map((endpoint) => (
                <tr key={endpoint.endpointId}>
                  <td class="url">
                    <Link to={{ view: "webhook", endpointId: endpoint.endpointId }}><UserText text={endpoint.url} /></Link>
                    <div class="muted"><code>{endpoint.endpointId}</code></div>
                  </td>
                  <td>{endpoint.events.join(", ")}</td>
                  <td>{endpoint.active ? "yes" : "no"}</td>
                  <td><code>{endpoint.secretPrefix}</code>…</td>
                  <td><Time iso={endpoint.createdAt} /></td>
                </tr>
              ))}
            </ListTable>
          )}
        </ListState>
      </section>
    </>
  )
}
