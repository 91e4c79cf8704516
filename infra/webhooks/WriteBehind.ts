/**
 * A lane's records written behind it: the next delivery starts while the previous one's success
 * record commits, so a lane is not bound by commit latency. One append is in flight per lane at
 * a time and carries every record that came meanwhile (one commit for many). The lane settles
 * them before it reads its open deliveries again (the view must show them finished), before it
 * abandons anything and before it goes idle. A crash in between re-sends the delivered events,
 * in order: at least once.
 *
 * A store that fails does not make the lane send again: the writer retries the same records,
 * backing off (infra/Backoff.ts), for as long as the lane runs.
 */
import { Effect, Fiber } from "effect"
import type * as Delivery from "../../domain/webhooks/WebhookDelivery.ts"
import { backoff } from "../Backoff.ts"
import type { AppendRequest, EventStoreShape, StoreUnavailable } from "../eventlog/EventStore.ts"
import type { DeliveryRow } from "./WebhookProjections.ts"

export interface Pending {
  readonly records: Array<{ readonly row: DeliveryRow; readonly events: ReadonlyArray<Delivery.DeliveryEvent> }>
  writer: Fiber.Fiber<void, StoreUnavailable> | undefined
}

export const makeWriteBehind = (deps: {
  readonly store: EventStoreShape
  readonly requestOf: (row: DeliveryRow, events: ReadonlyArray<Delivery.DeliveryEvent>) => AppendRequest
  /** Called once a record has committed (the lane's envelope may go). */
  readonly written: (row: DeliveryRow) => void
}) => {
  /** Appends, retrying a failing store with backoff; a record some peer wrote first is skipped. */
  const durably = (requests: ReadonlyArray<AppendRequest>) =>
    deps.store.append(requests).pipe(
      Effect.catchTag("ConcurrencyConflict", () =>
        Effect.forEach(requests, (request) => deps.store.append([request]).pipe(Effect.catchTag("ConcurrencyConflict", () => Effect.void)), {
          discard: true
        })),
      Effect.tapError((error) => Effect.logWarning("webhook delivery records not written yet; retrying", error)),
      Effect.retry(backoff("30 seconds"))
    )

  const write = Effect.fnUntraced(function*(pending: Pending) {
    while (pending.records.length > 0) {
      const batch = pending.records.splice(0, 200)
      yield* durably(batch.map(({ row, events }) => deps.requestOf(row, events)))
      for (const { row } of batch) deps.written(row)
    }
    // No yield between the emptiness check and this line: a record pushed later starts a writer.
    pending.writer = undefined
  })

  return {
    make: (): Pending => ({ records: [], writer: undefined }),
    /** Queues a record behind the lane, starting the writer if none runs. */
    behind: Effect.fnUntraced(function*(pending: Pending, row: DeliveryRow, events: ReadonlyArray<Delivery.DeliveryEvent>) {
      pending.records.push({ row, events })
      if (pending.writer === undefined) pending.writer = yield* Effect.forkChild(write(pending))
    }),
    /** Waits until every record queued so far has committed. */
    settle: (pending: Pending) => Effect.suspend(() => (pending.writer === undefined ? Effect.void : Fiber.join(pending.writer))),
    /** The same retrying append, for a record the lane waits for (a failed attempt). */
    durably
  }
}
