/**
 * One webhook endpoint: edit its URL, events and active flag (PATCH with what changed), rotate
 * its signing secret (after a confirmation: the old one stops at once; the new one shown once),
 * delete it (after a confirmation), and its delivery history with resend and recover.
 */
import { useState } from "preact/hooks"
import type { WebhookEndpoint } from "../../../client/index.ts"
import { type Client, isPinned, type Me, type Problem, toProblem } from "../api.ts"
import { useAction, useResource } from "../data.ts"
import { navigate } from "../router.ts"
import { Button } from "../ui/Button.tsx"
import { Confirm } from "../ui/Confirm.tsx"
import { dropErrorOnEdit, ErrorNotice, Loading, PinnedNotice } from "../ui/Feedback.tsx"
import { whenReplacing } from "../ui/LeaveGuard.tsx"
import { Link } from "../ui/Link.tsx"
import { sayOutcome } from "../ui/Outcome.tsx"
import { SecretOnce } from "../ui/SecretOnce.tsx"
import { UserText } from "../ui/Text.tsx"
import { Time } from "../ui/Time.tsx"
import { Deliveries } from "./Deliveries.tsx"
import { EventPicker } from "./EventPicker.tsx"

const sameEvents = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((event) => b.includes(event))

const EditEndpoint = (
  { client, endpoint, onSaved }: { readonly client: Client; readonly endpoint: WebhookEndpoint; readonly onSaved: () => void }
) => {
  const [url, setUrl] = useState(endpoint.url)
  const [events, setEvents] = useState<ReadonlyArray<string>>(endpoint.events)
  const [active, setActive] = useState(endpoint.active)
  const [busy, setBusy] = useState(false)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  const changes = {
    ...(url.trim() === endpoint.url ? {} : { url: url.trim() }),
    ...(sameEvents(events, endpoint.events) ? {} : { events: [...events] }),
    ...(active === endpoint.active ? {} : { active })
  }
  const changed = Object.keys(changes).length > 0
  return (
    <section aria-labelledby="edit-title">
      <h2 id="edit-title">Edit</h2>
      <form
        {...dropErrorOnEdit(() => setProblem(undefined))}
        onSubmit={async (event) => {
          event.preventDefault()
          if (busy || !changed || events.length === 0) return
          setBusy(true)
          setProblem(undefined)
          try {
            // The form shows what was saved and stays mounted, so the focus stays on its button.
            const saved = await client.webhooks.update(endpoint.endpointId, changes)
            setUrl(saved.url)
            setEvents(saved.events)
            setActive(saved.active)
            onSaved()
          } catch (error) {
            setProblem(toProblem(error))
          } finally {
            setBusy(false)
          }
        }}
      >
        <label for="edit-url">HTTPS URL</label>
        <input id="edit-url" type="url" required value={url} onInput={(event) => setUrl(event.currentTarget.value)} />
        <EventPicker idPrefix="edit-event" selected={events} onChange={setEvents} />
        <div class="check">
          <input id="edit-active" type="checkbox" checked={active} onChange={(event) => setActive(event.currentTarget.checked)} />
          <label for="edit-active">Active</label>
        </div>
        <Button type="submit" enabled={!busy && changed && events.length > 0} why={events.length === 0 ? "Pick at least one event." : changed ? "" : "Nothing to save."}>
          {busy ? "Saving…" : "Save changes"}
        </Button>
      </form>
      {problem === undefined ? null : <ErrorNotice problem={problem} />}
    </section>
  )
}

const Danger = (
  { client, endpointId, onRotated }: { readonly client: Client; readonly endpointId: string; readonly onRotated: () => void }
) => {
  const [secret, setSecret] = useState<string | undefined>(undefined)
  const { problem, act } = useAction()
  return (
    <section aria-labelledby="secret-title">
      <h2 id="secret-title">Signing secret and deletion</h2>
      <div class="actions">
        <Confirm
          label="Rotate secret"
          confirmLabel="Confirm rotate"
          keepLabel="Keep the current secret"
          warning="The current secret stops signing at once, queued retries included."
          onConfirm={() =>
            // A new secret would replace one still shown: that asks first (LeaveGuard.tsx).
            whenReplacing(() =>
              act(async () => {
                setSecret((await client.webhooks.rotateSecret(endpointId)).secret)
                onRotated()
              })
            )}
        />
        <Confirm
          label="Delete endpoint"
          confirmLabel="Confirm delete"
          keepLabel="Keep it"
          danger
          onConfirm={() =>
            act(async () => {
              await client.webhooks.delete(endpointId)
              // This page goes with the endpoint: the list says what happened (the focus goes
              // to its heading, as on any change of view). A new secret still shown signs
              // nothing now, so leaving it does not ask.
              navigate({ view: "webhooks" }, { ask: false })
              sayOutcome(`Endpoint ${endpointId} deleted.`)
            })}
        />
      </div>
      <p class="muted">Rotating stops the old secret at once, for queued retries too. Deleting stops unfinished deliveries.</p>
      {secret === undefined ? null : (
        <SecretOnce title="Secret rotated" label="New signing secret" value={secret} onDone={() => setSecret(undefined)} />
      )}
      {problem === undefined ? null : <ErrorNotice problem={problem} />}
    </section>
  )
}

export const WebhookDetail = ({ client, me, endpointId }: { readonly client: Client; readonly me: Me; readonly endpointId: string }) =>
  isPinned(me) ? <PinnedNotice what="webhook endpoints" userId={me.pinnedUserId ?? ""} /> : <Endpoint client={client} endpointId={endpointId} />

const Endpoint = ({ client, endpointId }: { readonly client: Client; readonly endpointId: string }) => {
  const endpoint = useResource(`endpoint:${endpointId}`, () => client.webhooks.get(endpointId))
  const [status, setStatus] = useState("")
  return (
    <>
      <p><Link to={{ view: "webhooks" }}>← All endpoints</Link></p>
      {endpoint.problem === undefined ? null : <ErrorNotice problem={endpoint.problem} />}
      {endpoint.value === undefined ? (endpoint.problem === undefined ? <Loading what="the endpoint" /> : null) : (
        <>
          <dl class="fields">
            <dt>Endpoint id</dt>
            <dd><code>{endpoint.value.endpointId}</code></dd>
            <dt>URL</dt>
            <dd class="url"><UserText text={endpoint.value.url} /></dd>
            <dt>Events</dt>
            <dd>{endpoint.value.events.join(", ")}</dd>
            <dt>Active</dt>
            <dd>{endpoint.value.active ? "yes" : "no"}</dd>
            <dt>Secret prefix</dt>
            <dd><code>{endpoint.value.secretPrefix}</code>…</dd>
            <dt>Created</dt>
            <dd><Time iso={endpoint.value.createdAt} /></dd>
            <dt>Updated</dt>
            <dd><Time iso={endpoint.value.updatedAt} /></dd>
          </dl>
          <EditEndpoint
            client={client}
            endpoint={endpoint.value}
            onSaved={() => {
              setStatus("Changes saved.")
              endpoint.reload()
            }}
          />
          <p role="status" aria-live="polite">{status}</p>
          <Danger
            client={client}
            endpointId={endpointId}
            onRotated={() => {
              // The new prefix and update time, as the service now has them.
              setStatus("")
              endpoint.reload()
            }}
          />
          <Deliveries client={client} endpointId={endpointId} active={endpoint.value.active} />
        </>
      )}
    </>
  )
}
