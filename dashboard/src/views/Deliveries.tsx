/**
 * An endpoint's delivery history: each delivery with its status, next retry and completion, and
 * its attempts as a timeline (time, then the receiver's HTTP status or the sanitized transport
 * error). Polls while a delivery is pending or delivering.
 *
 * The recovery extension (decisions.md 9; this view is for unpinned keys only, as every webhook
 * route): a finished delivery can be resent (a new delivery of the same event, at the lane's
 * tail), and the endpoint's failed deliveries since a time recovered. Either way the history is
 * loaded again from its first page, where the new deliveries are. An inactive endpoint is offered
 * neither (the service refuses both with 409): the view says to activate it first.
 */
import { useState } from "preact/hooks"
import type { WebhookDelivery } from "../../../client/index.ts"
import { type Client, type Problem, toProblem } from "../api.ts"
import { PAGE_SIZE, useAction, usePaged } from "../data.ts"
import { Button } from "../ui/Button.tsx"
import { dropErrorOnEdit, ErrorNotice } from "../ui/Feedback.tsx"
import { useFocusKept } from "../ui/Focus.ts"
import { ListState } from "../ui/ListState.tsx"
import { Refreshing } from "../ui/Refreshing.tsx"
import { shownText, UserText } from "../ui/Text.tsx"
import { formatTime, Time, zoneOf } from "../ui/Time.tsx"

const unfinished = (delivery: WebhookDelivery) => delivery.status === "pending" || delivery.status === "delivering"

type Attempt = WebhookDelivery["attempts"][number]

const outcome = (attempt: Attempt): { readonly ok: boolean; readonly text: string } =>
  "statusCode" in attempt
    ? { ok: attempt.statusCode >= 200 && attempt.statusCode < 300, text: `HTTP ${attempt.statusCode}` }
    : { ok: false, text: `error: ${attempt.error}` }

/** Resends a finished delivery; one still on its way has nothing to resend yet. */
const Resend = (
  { client, delivery, onResent }: { readonly client: Client; readonly delivery: WebhookDelivery; readonly onResent: (resent: WebhookDelivery) => void }
) => {
  const { problem, act } = useAction()
  if (unfinished(delivery) && problem === undefined) return null
  return (
    <div class="actions">
      {unfinished(delivery) ? null : (
        <button
          type="button"
          aria-label={`Resend ${delivery.deliveryId}`}
          onClick={() => act(async () => onResent(await client.webhooks.resendDelivery(delivery.endpointId, delivery.deliveryId)))}
        >
          Resend
        </button>
      )}
      {problem === undefined ? null : <ErrorNotice problem={problem} />}
    </div>
  )
}

/**
 * What a delivery without attempts says: waiting for its first, or, once failed, stopped before
 * it (its endpoint was deactivated or deleted, and no attempt is recorded for that).
 */
const noAttempt = (delivery: WebhookDelivery): string =>
  delivery.status === "failed" ? "Stopped before any attempt: its endpoint was deactivated or deleted." : "No attempt yet."

const Delivery = (
  { client, delivery, onResent }: { readonly client: Client; readonly delivery: WebhookDelivery; readonly onResent: ((resent: WebhookDelivery) => void) | undefined }
) => (
  <li class={`delivery status-${delivery.status}`} data-delivery-id={delivery.deliveryId}>
    <div class="delivery-head">
      <span class={`badge badge-${delivery.status}`}>{delivery.status}</span> <code><UserText text={delivery.eventType} /></code>{" "}
      <span class="muted">event <code><UserText text={delivery.eventId} /></code> · delivery <code>{delivery.deliveryId}</code></span>
    </div>
    {delivery.attempts.length === 0 ? <p class="muted">{noAttempt(delivery)}</p> : (
      <ol class="timeline" aria-label={`Attempts of ${delivery.deliveryId}`}>
        {delivery.attempts.map((attempt, index) => {
          const result = outcome(attempt)
          return (
            <li key={`${attempt.attemptedAt}-${index}`} class={result.ok ? "attempt ok" : "attempt failed"}>
              <span class="attempt-number">Attempt {index + 1}</span> <Time iso={attempt.attemptedAt} /> —{" "}
              <UserText class="attempt-result" text={result.text} />
            </li>
          )
        })}
      </ol>
    )}
    {delivery.nextRetryAt === undefined ? null : <p>Next retry: <Time iso={delivery.nextRetryAt} /></p>}
    {delivery.completedAt === undefined ? null : <p class="muted">Completed: <Time iso={delivery.completedAt} /></p>}
    {onResent === undefined ? null : <Resend client={client} delivery={delivery} onResent={onResent} />}
  </li>
)

const pad = (n: number) => String(n).padStart(2, "0")

/** `datetime-local`'s value (local time, to the minute) for a moment. */
const localInput = (date: Date): string =>
  `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`

const DAY_MS = 24 * 60 * 60 * 1000

/** The moment a `datetime-local` value names, or now while it names none (for its zone). */
const sinceDate = (value: string): Date => {
  const date = new Date(value)
  return Number.isNaN(date.getTime()) ? new Date() : date
}

/** Queues the endpoint's failed deliveries since a time again, a day ago unless changed. */
const Recover = ({ client, endpointId, onRecovered }: { readonly client: Client; readonly endpointId: string; readonly onRecovered: (said: string) => void }) => {
  const [since, setSince] = useState(() => localInput(new Date(Date.now() - DAY_MS)))
  const [busy, setBusy] = useState(false)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  return (
    <>
      <form
        class="inline"
        aria-label="Recover failed deliveries"
        {...dropErrorOnEdit(() => setProblem(undefined))}
        onSubmit={async (event) => {
          event.preventDefault()
          if (busy) return
          const at = new Date(since)
          if (Number.isNaN(at.getTime())) {
            setProblem({ code: "invalid_input", message: "Enter the date and time to recover failed deliveries from.", status: 0, retryable: false })
            return
          }
          setBusy(true)
          setProblem(undefined)
          try {
            const { count } = await client.webhooks.recover(endpointId, { since: at })
            const when = formatTime(at.toISOString())
            onRecovered(count === 0 ? `No failed deliveries since ${when} to recover.` : `${count} failed ${count === 1 ? "delivery" : "deliveries"} since ${when} queued again.`)
          } catch (error) {
            setProblem(toProblem(error))
          } finally {
            setBusy(false)
          }
        }}
      >
        <label for="recover-since">Failed since (your local time, {zoneOf(sinceDate(since))})</label>
        <input id="recover-since" type="datetime-local" required value={since} onInput={(event) => setSince(event.currentTarget.value)} />
        <button type="submit" aria-disabled={busy}>{busy ? "Recovering…" : "Recover failed deliveries"}</button>
      </form>
      {problem === undefined ? null : <ErrorNotice problem={problem} />}
    </>
  )
}

export const Deliveries = ({ client, endpointId, active }: { readonly client: Client; readonly endpointId: string; readonly active: boolean }) => {
  const paged = usePaged(
    `deliveries:${endpointId}`,
    async (cursor) => {
      const page = await client.webhooks.listDeliveries(endpointId, { limit: PAGE_SIZE, cursor })
      return { items: page.deliveries, nextCursor: page.nextCursor }
    },
    unfinished
  )
  const [said, setSaid] = useState("")
  // New deliveries are the newest: the first page shows them.
  const showNew = (text: string) => {
    setSaid(text)
    if (paged.page > 0) paged.first()
    else paged.reload()
  }
  const polling = paged.value?.items.some(unfinished) === true
  // A resend from a later page shows the first, where the new delivery is: the focused Resend
  // leaves with its page, and the focus goes to the history's heading rather than the body.
  const { section, heading } = useFocusKept(paged.value)
  return (
    <section ref={section} aria-labelledby="deliveries-title">
      <div class="section-head">
        <h2 id="deliveries-title" ref={heading} tabIndex={-1}>Delivery history</h2>
        <Button enabled={!paged.busy} onPress={paged.reload}>Refresh</Button>
      </div>
      {active
        ? <Recover client={client} endpointId={endpointId} onRecovered={showNew} />
        : <p class="muted">This endpoint is inactive: activate it above to resend or recover its deliveries.</p>}
      <p role="status" aria-live="polite">{said}</p>
      <Refreshing polling={polling} while="deliveries are in progress" />
      <ListState paged={paged} what="deliveries" empty="No deliveries to this endpoint yet.">
        {(deliveries) => (
          <ol class="deliveries">
            {deliveries.map((delivery) => (
              <Delivery
                key={delivery.deliveryId}
                client={client}
                delivery={delivery}
                onResent={active ? (resent) => showNew(`Resent as ${resent.deliveryId}, a new delivery of event ${shownText(resent.eventId)}.`) : undefined}
              />
            ))}
          </ol>
        )}
      </ListState>
    </section>
  )
}
