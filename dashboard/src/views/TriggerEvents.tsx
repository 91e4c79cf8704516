/**
 * Trigger event history (unpinned keys only), filtered by subscription and trigger, newest
 * first: each arrival's dedup status, aggregate delivery status and per-endpoint targets.
 * Polls while an event is still being selected, pending or delivering.
 */
import type { RefObject } from "preact"
import { useRef, useState } from "preact/hooks"
import { listTriggers, type TriggerEvent } from "../../../client/index.ts"
import { type Client, isPinned, type Me } from "../api.ts"
import { PAGE_SIZE, usePaged } from "../data.ts"
import { navigate } from "../router.ts"
import { Button } from "../ui/Button.tsx"
import { Link } from "../ui/Link.tsx"
import { PinnedNotice } from "../ui/Feedback.tsx"
import { ListState } from "../ui/ListState.tsx"
import { ListTable } from "../ui/ListTable.tsx"
import { PatternInput } from "../ui/PatternInput.tsx"
import { Refreshing } from "../ui/Refreshing.tsx"
import { UserText } from "../ui/Text.tsx"
import { Time } from "../ui/Time.tsx"

const MOVING: ReadonlySet<string> = new Set(["selecting", "pending", "delivering"])
const moving = (event: TriggerEvent) => MOVING.has(event.deliveryStatus)

interface Filters {
  readonly subscriptionId?: string | undefined
  readonly trigger?: string | undefined
}

/** Applying or clearing makes the form anew for the new filters: `onApply` moves the focus out of it first. */
const FilterBar = ({ filters, onApply }: { readonly filters: Filters; readonly onApply: () => void }) => {
  const [subscriptionId, setSubscriptionId] = useState(filters.subscriptionId ?? "")
  const [trigger, setTrigger] = useState(filters.trigger ?? "")
  return (
    <form
      class="inline filters-bar"
      aria-label="Filter trigger events"
      onSubmit={(event) => {
        event.preventDefault()
        const id = subscriptionId.trim()
        navigate({ view: "trigger-events", ...(id === "" ? {} : { subscriptionId: id }), ...(trigger === "" ? {} : { trigger }) })
        onApply()
      }}
    >
      <label for="events-subscription">Subscription id</label>
      <PatternInput
        id="events-subscription"
        placeholder="trgsub_…"
        value={subscriptionId}
        // Only an id the list can use (router.ts SUBSCRIPTION_ID), as the executions' user id field:
        // one the URL would drop is not applied silently. Spaces around a pasted one are trimmed.
        pattern="\s*trgsub_[0-9a-hjkmnp-tv-z]{32}\s*"
        title="A subscription id: trgsub_ and 32 lower-case letters and digits"
        onInput={setSubscriptionId}
      />
      <label for="events-trigger">Trigger</label>
      <select id="events-trigger" value={trigger} onChange={(event) => setTrigger(event.currentTarget.value)}>
        <option value="">Any trigger</option>
        {listTriggers().map((entry) => <option key={entry.name} value={entry.name}>{entry.name}</option>)}
      </select>
      <button type="submit">Apply filters</button>
      <button
        type="button"
        onClick={() => {
          setSubscriptionId("")
          setTrigger("")
          navigate({ view: "trigger-events" })
          onApply()
        }}
      >
        Clear
      </button>
    </form>
  )
}

/**
 * Links like the other lists': to the subscription's page, and to each endpoint's page, which holds its deliveries.
 * The long ids share cells (the subscription under the event, a delivery under its endpoint), so a row fits 1280 px.
 */
const EventRow = ({ event }: { readonly event: TriggerEvent }) => (
  <tr data-arrival-id={event.arrivalId}>
    <td><Time iso={event.receivedAt} /></td>
    <td><code>{event.trigger}</code><div class="muted">{event.deliveryMode}</div></td>
    <td>{event.dedupStatus}</td>
    <td><span class={`badge badge-${event.deliveryStatus}`}>{event.deliveryStatus}</span></td>
    <td>
      {event.deliveryTargets.length === 0 ? <span class="muted">none</span> : (
        <ul class="targets">
          {event.deliveryTargets.map((target) => (
            <li key={target.deliveryId}>
              <Link to={{ view: "webhook", endpointId: target.endpointId }}><code>{target.endpointId}</code></Link>: {target.status}
              <div class="muted">delivery <code>{target.deliveryId}</code></div>
            </li>
          ))}
        </ul>
      )}
    </td>
    <td>
      <code><UserText text={event.eventId} /></code>
      <div>from <Link to={{ view: "subscription", subscriptionId: event.subscriptionId }}><code>{event.subscriptionId}</code></Link></div>
      <div class="muted">occurred <Time iso={event.occurredAt} /></div>
    </td>
  </tr>
)

const History = (
  { client, filters, heading }: { readonly client: Client; readonly filters: Filters; readonly heading: RefObject<HTMLHeadingElement | null> }
) => {
  const paged = usePaged(
    `trigger-events:${filters.subscriptionId ?? ""}:${filters.trigger ?? ""}`,
    async (cursor) => {
      const page = await client.triggerEvents.list({ limit: PAGE_SIZE, cursor, subscriptionId: filters.subscriptionId, trigger: filters.trigger })
      return { items: page.triggerEvents, nextCursor: page.nextCursor }
    },
    moving
  )
  const polling = paged.value?.items.some(moving) === true
  return (
    <section aria-labelledby="trigger-events-title">
      <div class="section-head">
        <h2 id="trigger-events-title" ref={heading} tabIndex={-1}>Events</h2>
        <Button enabled={!paged.busy} onPress={paged.reload}>Refresh</Button>
      </div>
      <Refreshing polling={polling} while="deliveries are in progress" />
      <ListState paged={paged} what="trigger events" empty="No trigger events match.">
        {(events) => (
          <ListTable
            label="Trigger events, newest first"
            columns={["Received", "Trigger", "Dedup", "Delivery", "Targets", "Event and subscription"]}
          >
            {events.map((event) => <EventRow key={event.arrivalId} event={event} />)}
          </ListTable>
        )}
      </ListState>
    </section>
  )
}

export const TriggerEvents = ({ client, me, filters }: { readonly client: Client; readonly me: Me; readonly filters: Filters }) =>
  isPinned(me) ? <PinnedNotice what="trigger event history" userId={me.pinnedUserId ?? ""} /> : <Filtered client={client} filters={filters} />

const Filtered = ({ client, filters }: { readonly client: Client; readonly filters: Filters }) => {
  const heading = useRef<HTMLHeadingElement>(null)
  return (
    <>
      <FilterBar key={`${filters.subscriptionId ?? ""}:${filters.trigger ?? ""}`} filters={filters} onApply={() => heading.current?.focus()} />
      <History client={client} filters={filters} heading={heading} />
    </>
  )
}
