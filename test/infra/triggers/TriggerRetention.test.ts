/**
 * Memory mode keeps trigger history bounded: the history sweep drops a row at its expiry (7
 * days), and memory retention then drops the arrival's stream and the sweeps' own streams (before,
 * every arrival's stream stayed in memory for as long as the process ran).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { EventStore } from "../../../infra/eventlog/EventStore.ts"
import { layerMemory } from "../../../infra/eventlog/MemoryEventStore.ts"
import { sweep } from "../../../infra/eventlog/MemoryRetention.ts"
import { Projections } from "../../../infra/eventlog/Projection.ts"
import { ViewStore } from "../../../infra/eventlog/ViewStore.ts"
import { EVENTS_TABLE, triggerEventsProjection, triggerProgressProjection } from "../../../infra/triggers/TriggerProjections.ts"
import {
  ARRIVAL_STREAM_TYPE,
  arrivalCodec,
  arrivalStreamId,
  HISTORY_TTL_MS,
  SWEEP_STREAM_TYPE,
  sweepCodec
} from "../../../domain/triggers/TriggerEvent.ts"

const Memory = layerMemory.pipe(Layer.provideMerge(Layer.succeed(Projections, [triggerEventsProjection, triggerProgressProjection])))

const WINDOW_MS = 1000

const eventsOf = (streamId: string) => Effect.gen(function*() {
  return (yield* (yield* EventStore).readStream(streamId, 1)).length
})

const historyRow = (arrivalId: string) => Effect.gen(function*() {
  return yield* (yield* ViewStore).get(EVENTS_TABLE, { arrival_id: arrivalId })
})

describe("trigger history in memory", () => {
  it.effect("an arrival's stream goes once its row has expired; a sweep's stream once past the window", () =>
    Effect.gen(function*() {
      const store = yield* EventStore
      const arrivalId = "arr_1"
      yield* store.append([{
        streamId: arrivalStreamId(arrivalId),
        streamType: ARRIVAL_STREAM_TYPE,
        expectedVersion: 0,
        events: [arrivalCodec.encode({
          type: "TriggerEventReceived",
          arrivalId,
          eventId: "ev_1",
          projectId: "p1",
          subscriptionId: "trgsub_1",
          userId: "u1",
          trigger: "demo.event",
          deliveryMode: "push",
          receivedAt: new Date(0).toISOString(),
          occurredAt: new Date(0).toISOString(),
          dedupStatus: "accepted",
          requestedWebhookEndpointIds: []
        }, "evt_a1")]
      }])
      const sweepStream = `${SWEEP_STREAM_TYPE}-evt_s1`
      yield* store.append([{
        streamId: sweepStream,
        streamType: SWEEP_STREAM_TYPE,
        expectedVersion: 0,
        events: [sweepCodec.encode({ type: "TriggerEventsSwept", arrivalIds: ["arr_gone"], at: new Date(0).toISOString() }, "evt_s1")]
      }])

      yield* TestClock.adjust("30 seconds")
      yield* sweep(WINDOW_MS)
      assert.isDefined(yield* historyRow(arrivalId))
      assert.strictEqual(yield* eventsOf(arrivalStreamId(arrivalId)), 1)
      assert.strictEqual(yield* eventsOf(sweepStream), 0)

      // Past the row's expiry and the window: the row (had the history sweep left it) and its stream go.
      yield* TestClock.adjust(HISTORY_TTL_MS)
      yield* sweep(WINDOW_MS)
      assert.isUndefined(yield* historyRow(arrivalId))
      assert.strictEqual(yield* eventsOf(arrivalStreamId(arrivalId)), 0)
    }).pipe(Effect.provide(Memory)))
})
