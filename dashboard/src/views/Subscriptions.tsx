/**
 * Trigger subscriptions: create one from the catalog's triggers (filters from the trigger's
 * filter schema; a push trigger's ingest URL shown once), the list with cursor paging (a pinned
 * key sees its user's), rotate a push subscription's ingest URL (after a confirmation: the old
 * one stops at once; the new one shown once), delete (after a confirmation).
 */
import { useMemo, useRef, useState } from "preact/hooks"
import { type CreatedSubscription, findToolkit, listTriggers, type Subscription } from "../../../client/index.ts"
import { type Client, isPinned, type Me, type Problem, toProblem } from "../api.ts"
import { PAGE_SIZE, useAction, usePaged, useResource } from "../data.ts"
import { acceptsTrigger } from "../events.ts"
import { filterFields, filtersFrom, type FilterValues } from "../filterSchema.ts"
import { Button } from "../ui/Button.tsx"
import { CodeText } from "../ui/CodeText.tsx"
import { Confirm } from "../ui/Confirm.tsx"
import { dropErrorOnEdit, ErrorNotice } from "../ui/Feedback.tsx"
import { whenReplacing } from "../ui/LeaveGuard.tsx"
import { Link } from "../ui/Link.tsx"
import { ListState } from "../ui/ListState.tsx"
import { ListTable } from "../ui/ListTable.tsx"
import { SecretOnce } from "../ui/SecretOnce.tsx"
import { shownJson, UserText } from "../ui/Text.tsx"
import { Time } from "../ui/Time.tsx"
import { FilterForm } from "./FilterForm.tsx"

const TRIGGERS = listTriggers()

const splitIds = (text: string): ReadonlyArray<string> => text.split(/[\s,]+/).filter((id) => id !== "")

/** Endpoints to pick from (unpinned keys can list them): those subscribed to the trigger first. */
const EndpointChoice = (
  { client, trigger, selected, describedBy, onChange }: {
    readonly client: Client
    readonly trigger: string
    readonly selected: ReadonlyArray<string>
    /** The id of the form's message about this field, while it shows one. */
    readonly describedBy: string | undefined
    readonly onChange: (ids: ReadonlyArray<string>) => void
  }
) => {
  // The first 100 endpoints are plenty to pick from; more can be typed into the id field.
  const endpoints = useResource("subscription-endpoints", () => client.webhooks.list({ limit: 100 }))
  const matching = (endpoints.value?.webhooks ?? []).filter((endpoint) => acceptsTrigger(endpoint.events, trigger))
  return (
    <fieldset class="endpoints" aria-describedby={describedBy}>
      <legend>Webhook endpoints (1 to 20)</legend>
      {endpoints.problem === undefined ? null : <ErrorNotice problem={endpoints.problem} />}
      {endpoints.value === undefined ? null : matching.length === 0 ? (
        <p class="muted">
          No endpoint subscribes to <code>trigger.{trigger}</code> or <code>trigger.*</code>. <Link to={{ view: "webhooks" }}>Add one</Link>.
        </p>
      ) : (
        matching.map((endpoint) => {
          const id = `subscription-endpoint-${endpoint.endpointId}`
          return (
            <div class="check" key={endpoint.endpointId}>
              <input
                id={id}
                type="checkbox"
                checked={selected.includes(endpoint.endpointId)}
                onChange={(event) =>
                  onChange(
                    event.currentTarget.checked
                      ? [...selected, endpoint.endpointId]
                      : selected.filter((entry) => entry !== endpoint.endpointId)
                  )}
              />
              <label for={id}>
                <UserText class="url" text={endpoint.url} /> <code class="muted">{endpoint.endpointId}</code>
                {endpoint.active ? null : <span class="muted"> (inactive)</span>}
              </label>
            </div>
          )
        })
      )}
    </fieldset>
  )
}

const CreateSubscription = (
  { client, me, onCreated }: { readonly client: Client; readonly me: Me; readonly onCreated: (created: CreatedSubscription) => void }
) => {
  const [triggerName, setTriggerName] = useState(TRIGGERS[0]?.name ?? "")
  const trigger = TRIGGERS.find((entry) => entry.name === triggerName)
  const fields = useMemo(() => (trigger === undefined ? [] : filterFields(trigger)), [trigger])
  const needsConnection = trigger !== undefined && !(findToolkit(trigger.toolkit)?.authClasses.every((auth) => auth === "none") ?? false)
  const [values, setValues] = useState<FilterValues>({})
  const [userId, setUserId] = useState(me.pinnedUserId ?? "")
  const [connectionId, setConnectionId] = useState("")
  const [picked, setPicked] = useState<ReadonlyArray<string>>([])
  const [typedIds, setTypedIds] = useState("")
  const [pollSeconds, setPollSeconds] = useState("")
  const [busy, setBusy] = useState(false)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  // Said at the endpoints' fields, in the page, before the service's schema would say it.
  const [noEndpoint, setNoEndpoint] = useState(false)
  const form = useRef<HTMLFormElement>(null)
  const pinned = isPinned(me)

  return (
    <section aria-labelledby="create-subscription-title">
      <h2 id="create-subscription-title">Subscribe to a trigger</h2>
      <form
        ref={form}
        {...dropErrorOnEdit(() => setProblem(undefined))}
        onSubmit={(event) => {
          event.preventDefault()
          if (busy || trigger === undefined) return
          if (picked.length === 0 && splitIds(typedIds).length === 0) {
            setProblem(undefined)
            setNoEndpoint(true)
            // The focus goes to the first endpoint to tick, or to the ids field when none is listed.
            form.current?.querySelector<HTMLInputElement>("fieldset.endpoints input, #subscription-endpoint-ids")?.focus()
            return
          }
          // A creation puts away the ingest URL shown (a polling one shows none), or replaces it
          // with its own: that asks first (LeaveGuard.tsx).
          whenReplacing(async () => {
            setBusy(true)
            setProblem(undefined)
            const webhookEndpointIds = [...new Set([...picked, ...splitIds(typedIds)])]
            try {
              const created = await client.subscriptions.create({
                trigger: trigger.name,
                webhookEndpointIds,
                filters: filtersFrom(fields, values),
                ...(userId.trim() === "" ? {} : { userId: userId.trim() }),
                ...(connectionId.trim() === "" ? {} : { connectionId: connectionId.trim() }),
                ...(trigger.deliveryMode === "polling" && pollSeconds.trim() !== "" ? { pollIntervalSeconds: Number(pollSeconds) } : {})
              })
              setValues({})
              setPicked([])
              setTypedIds("")
              onCreated(created)
            } catch (error) {
              setProblem(toProblem(error))
            } finally {
              setBusy(false)
            }
          }, trigger.deliveryMode === "polling" ? "remove" : "replace")
        }}
      >
        <label for="subscription-trigger">Trigger</label>
        <select
          id="subscription-trigger"
          value={triggerName}
          aria-describedby="subscription-trigger-hint"
          onChange={(event) => {
            setTriggerName(event.currentTarget.value)
            setValues({})
            setPicked([])
            setNoEndpoint(false)
            // An error about the last trigger's form (its filters, its poll interval) goes with it.
            setProblem(undefined)
          }}
        >
          {TRIGGERS.map((entry) => <option key={entry.name} value={entry.name}>{entry.name} ({entry.deliveryMode})</option>)}
        </select>
        <p id="subscription-trigger-hint" class="hint"><CodeText text={trigger?.description ?? ""} /></p>

        <label for="subscription-user">User id{pinned ? " (your key's user)" : ""}</label>
        <input
          id="subscription-user"
          type="text"
          required={!pinned}
          readOnly={pinned}
          value={userId}
          onInput={(event) => setUserId(event.currentTarget.value)}
        />

        {needsConnection ? (
          <>
            <label for="subscription-connection">Connection id (optional when the user has one {trigger?.toolkit} connection)</label>
            <input id="subscription-connection" type="text" value={connectionId} onInput={(event) => setConnectionId(event.currentTarget.value)} />
          </>
        ) : null}

        {pinned ? null : (
          <EndpointChoice
            client={client}
            trigger={triggerName}
            selected={picked}
            describedBy={noEndpoint ? "subscription-endpoints-error" : undefined}
            onChange={(ids) => {
              setPicked(ids)
              setNoEndpoint(false)
            }}
          />
        )}
        <label for="subscription-endpoint-ids">{pinned ? "Webhook endpoint ids" : "Other webhook endpoint ids (optional)"}</label>
        <input
          id="subscription-endpoint-ids"
          type="text"
          required={pinned}
          placeholder="whe_…, whe_…"
          aria-describedby={`subscription-endpoint-ids-hint${noEndpoint ? " subscription-endpoints-error" : ""}`}
          aria-invalid={noEndpoint}
          value={typedIds}
          onInput={(event) => {
            setTypedIds(event.currentTarget.value)
            setNoEndpoint(false)
          }}
        />
        <p id="subscription-endpoint-ids-hint" class="hint">Comma or space separated.</p>
        {noEndpoint ? <p id="subscription-endpoints-error" class="field-error" role="alert">Pick at least one webhook endpoint.</p> : null}

        <FilterForm fields={fields} values={values} onChange={setValues} />

        {trigger?.deliveryMode === "polling" ? (
          <>
            <label for="subscription-poll">Poll interval in seconds (optional)</label>
            {/* The lower bound is the service's configuration, which the page cannot read: the
                field takes any whole number and the service judges it (a 422 names its range). */}
            <input
              id="subscription-poll"
              type="number"
              min={1}
              max={86400}
              step={1}
              aria-describedby="subscription-poll-hint"
              value={pollSeconds}
              onInput={(event) => setPollSeconds(event.currentTarget.value)}
            />
            {/* The minimum is an operator's setting (SERVICE_TRIGGER_MIN_POLL_SECONDS) that a customer can neither
                see nor set: the hint gives its default, not its name. */}
            <p id="subscription-poll-hint" class="hint">
              From the service's minimum (30 s by default) to 86400 s; 60 s when left empty (the minimum, if that is higher).
            </p>
          </>
        ) : null}

        <Button type="submit" enabled={!busy && trigger !== undefined}>{busy ? "Creating…" : "Create subscription"}</Button>
      </form>
      {problem === undefined ? null : <ErrorNotice problem={problem} />}
    </section>
  )
}

const Row = (
  { client, subscription, onIngestUrl, onDeleted }: {
    readonly client: Client
    readonly subscription: Subscription
    readonly onIngestUrl: (subscriptionId: string, url: string) => void
    readonly onDeleted: (subscriptionId: string) => void
  }
) => {
  const { problem, act } = useAction()
  const id = subscription.subscriptionId
  return (
    <tr data-subscription-id={id}>
      <td>
        <Link to={{ view: "subscription", subscriptionId: id }}><code>{id}</code></Link>
        {/* The long ids share a cell (the trigger and the endpoints under the subscription, as trigger events' rows
            do), so a row fits 1280 px without squeezing the user id or the time into many lines. */}
        <div><code>{subscription.trigger}</code></div>
        {subscription.webhookEndpointIds.map((endpointId) => (
          <div key={endpointId}>to <Link to={{ view: "webhook", endpointId }}><code>{endpointId}</code></Link></div>
        ))}
        <div><Link to={{ view: "trigger-events", subscriptionId: id }}>Events</Link></div>
      </td>
      <td class="user-id"><UserText text={subscription.userId} /></td>
      <td><code class="filters-json">{shownJson(JSON.stringify(subscription.filters))}</code></td>
      <td>{subscription.status}{subscription.pollIntervalSeconds === undefined ? "" : `, every ${subscription.pollIntervalSeconds} s`}</td>
      <td><Time iso={subscription.createdAt} /></td>
      <td>
        {/* The buttons' flex box is inside the cell: the cell itself stays a table cell, its border the row's. */}
        <div class="actions">
          {subscription.pollIntervalSeconds === undefined ? (
            <Confirm
              label="Rotate"
              confirmLabel="Confirm rotate"
              keepLabel="Keep the URL"
              warning="The current ingest URL stops working at once."
              startAria={`Rotate ingest URL of ${id}`}
              confirmAria={`Confirm rotating the ingest URL of ${id}`}
              onConfirm={() => whenReplacing(() => act(async () => onIngestUrl(id, (await client.subscriptions.rotateSecret(id)).ingestUrl)))}
            />
          ) : null}
          <Confirm
            label="Delete"
            confirmLabel="Confirm delete"
            keepLabel="Keep"
            danger
            startAria={`Delete ${id}`}
            confirmAria={`Confirm deleting ${id}`}
            onConfirm={() =>
              act(async () => {
                await client.subscriptions.delete(id)
                onDeleted(id)
              })}
          />
        </div>
        {problem === undefined ? null : <ErrorNotice problem={problem} />}
      </td>
    </tr>
  )
}

export const Subscriptions = ({ client, me }: { readonly client: Client; readonly me: Me }) => {
  const [refresh, setRefresh] = useState(0)
  const [shown, setShown] = useState<{ readonly subscriptionId: string; readonly title: string; readonly url: string } | undefined>(undefined)
  // Every creation says so, a polling one (no ingest URL) too; an older ingest URL panel goes.
  const [status, setStatus] = useState("")
  const heading = useRef<HTMLHeadingElement>(null)
  const paged = usePaged(`subscriptions:${refresh}`, async (cursor) => {
    const page = await client.subscriptions.list({ limit: PAGE_SIZE, cursor })
    return { items: page.subscriptions, nextCursor: page.nextCursor }
  })
  return (
    <>
      <CreateSubscription
        client={client}
        me={me}
        onCreated={(created) => {
          setShown(
            created.ingestUrl === undefined
              ? undefined
              : { subscriptionId: created.subscriptionId, title: `Subscription ${created.subscriptionId} created`, url: created.ingestUrl }
          )
          setStatus(
            created.ingestUrl === undefined
              ? `Subscription ${created.subscriptionId} created (polling every ${created.pollIntervalSeconds ?? 60} s).`
              : ""
          )
          setRefresh((n) => n + 1)
        }}
      />
      <p role="status" aria-live="polite" class={status === "" ? undefined : "success"}>{status}</p>
      {shown === undefined ? null : <SecretOnce title={shown.title} label="Ingest URL" value={shown.url} onDone={() => setShown(undefined)} />}
      <section aria-labelledby="subscriptions-title">
        <div class="section-head">
          <h2 id="subscriptions-title" ref={heading} tabIndex={-1}>Subscriptions</h2>
          <Button enabled={!paged.busy} onPress={paged.reload}>Refresh</Button>
        </div>
        <ListState paged={paged} what="subscriptions" empty="No trigger subscriptions yet.">
          {(subscriptions) => (
            <ListTable
              label="Trigger subscriptions, newest first"
              columns={["Subscription, trigger and endpoints", "User", "Filters", "Status", "Created"]}
              actions
            >
              {subscriptions.map((subscription) => (
                <Row
                  key={subscription.subscriptionId}
                  client={client}
                  subscription={subscription}
                  onIngestUrl={(id, url) => {
                    setStatus("")
                    setShown({ subscriptionId: id, title: `Ingest URL of ${id} rotated`, url })
                  }}
                  onDeleted={(id) => {
                    // The row goes, its buttons with it: the focus moves to the list's heading.
                    heading.current?.focus()
                    setStatus(`Subscription ${id} deleted.`)
                    // Its ingest URL, if shown, no longer works: it goes too.
                    setShown((current) => (current?.subscriptionId === id ? undefined : current))
                    setRefresh((n) => n + 1)
                  }}
                />
              ))}
            </ListTable>
          )}
        </ListState>
      </section>
    </>
  )
}
