/**
 * Memory mode keeps trigger history bounded: memory retention drops a history row, its progress
 * and the arrival's stream once the row was received longer ago than the window (decisions.md
 * section 1), unless the arrival is still selecting its targets, and the sweeps' own streams once
 * past the window (before, every arrival's stream stayed in memory for as long as the process
 * ran, and then a row stayed its 7 days).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { EventStore } from "../../../infra/eventlog/EventStore.ts"
import { layerMemory } from "../../../infra/eventlog/MemoryEventStore.ts"
import { sweep } from "../../../infra/eventlog/MemoryRetention.ts"
import { Projections } from "../../../infra/eventlog/Projection.ts"
import { ViewStore } from "../../../infra/eventlog/ViewStore.ts"
import { EVENTS_TABLE, PROGRESS_TABLE, triggerEventsProjection, triggerProgressProjection } from "../../../infra/triggers/TriggerProjections.ts"
import { encodeIdBody, ID_RANDOM_BYTES } from "../../../domain/Ids.ts"
import {
  ARRIVAL_STREAM_TYPE,
  arrivalCodec,
  arrivalStreamId,
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

const progressRow = (arrivalId: string) => Effect.gen(function*() {
  return yield* (yield* ViewStore).get(PROGRESS_TABLE, { arrival_id: arrivalId })
})

describe("trigger history in memory", () => {
  it.effect("an arrival goes with the window once its targets are chosen, with its row and progress; a sweep's stream once past the window", () =>
    Effect.gen(function*() {
      const store = yield* EventStore
      // Made at the test clock's start, as its id says (retention reads an arrival's age from it).
      const arrivalId = encodeIdBody(0, new Uint8Array(ID_RANDOM_BYTES), "trgevt")
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

      // Past the window but still selecting its targets: all of it stays.
      yield* TestClock.adjust("30 seconds")
      yield* sweep(WINDOW_MS)
      assert.isDefined(yield* historyRow(arrivalId))
      assert.isDefined(yield* progressRow(arrivalId))
      assert.strictEqual(yield* eventsOf(arrivalStreamId(arrivalId)), 1)
      assert.strictEqual(yield* eventsOf(sweepStream), 0)

      // Its targets chosen (none here), it goes at the next sweep: row, progress and stream.
      yield* store.append([{
        streamId: arrivalStreamId(arrivalId),
        streamType: ARRIVAL_STREAM_TYPE,
        expectedVersion: 1,
        events: [arrivalCodec.encode({ type: "TriggerTargetsSelected", targets: [], at: new Date(30_000).toISOString() }, "evt_a2")]
      }])
      yield* sweep(WINDOW_MS)
      assert.isUndefined(yield* historyRow(arrivalId))
      assert.isUndefined(yield* progressRow(arrivalId))
      assert.strictEqual(yield* eventsOf(arrivalStreamId(arrivalId)), 0)
    }).pipe(Effect.provide(Memory)))
})
