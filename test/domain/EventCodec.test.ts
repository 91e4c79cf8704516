import { describe, expect, it } from "vitest"
import type { Schema } from "effect"
import { connectionCodec, type ConnectionEvent } from "../../domain/Connection.ts"
import { EventDecodeError, type EncodedEvent } from "../../domain/EventCodec.ts"
import { type ExecutionEvent, executionCodec } from "../../domain/executions/Execution.ts"
import { idempotencyCodec } from "../../domain/executions/Idempotency.ts"
import { deliveryCodec, type DeliveryEvent } from "../../domain/webhooks/WebhookDelivery.ts"
import { endpointCodec, type EndpointEvent } from "../../domain/webhooks/WebhookEndpoint.ts"

/** What the log gives back: the data after a trip through JSON, under a stream id. */
const stored = (encoded: EncodedEvent, streamId = "s-1") => ({
  streamId,
  type: encoded.type,
  data: JSON.parse(JSON.stringify(encoded.data)) as Schema.Json
})

const base = {
  executionId: "exe_1",
  projectId: "proj_1",
  userId: "user_1",
  tool: "demo.echo",
  toolVersion: "1.0.0",
  catalogVersion: "c1",
  mode: "sync",
  createdAt: "2026-01-01T00:00:00.000Z",
  completedAt: "2026-01-01T00:00:00.010Z",
  latencyMs: 10
} as const
const record = { ...base, status: "succeeded", output: { echoed: [1, "two", null] } } as const

describe("stream codecs", () => {
  it("encode the event itself as the data, under its type and schema version 1", () => {
    const event: ExecutionEvent = { type: "ExecutionSucceeded", record }
    expect(executionCodec.encode(event, "evt_1")).toEqual({ eventId: "evt_1", type: "ExecutionSucceeded", schemaVersion: 1, data: event })
    expect(executionCodec.encode(event, "evt_1").data).toBe(event)
  })

  it("answer the data they just encoded with its event, without parsing it again", () => {
    const event: ExecutionEvent = { type: "ExecutionSucceeded", record }
    const encoded = executionCodec.encode(event, "evt_1")
    expect(executionCodec.decode({ streamId: "s-1", ...encoded })).toBe(event)
    // The same data under another envelope type is parsed, and refused.
    expect(() => executionCodec.decode({ streamId: "s-1", type: "ExecutionFailed", data: encoded.data })).toThrow(EventDecodeError)
  })

  it("decode what they encoded, for every stream type", () => {
    const execution: ReadonlyArray<ExecutionEvent> = [
      {
        type: "ExecutionRequested",
        executionId: "exe_1",
        projectId: "proj_1",
        userId: "user_1",
        tool: "demo.echo",
        toolVersion: "1.0.0",
        catalogVersion: "c1",
        mode: "async",
        sealedInput: "v1.x",
        owner: "proc_a",
        requestedAt: "2026-01-01T00:00:00.000Z"
      },
      { type: "ExecutionSucceeded", record },
      {
        type: "ExecutionCancelled",
        dispatchMayHaveBegun: true,
        record: {
          ...base,
          status: "cancelled",
          error: { code: "execution_cancelled", message: "x", retryable: false },
          cancellation: { dispatchMayHaveBegun: true }
        }
      }
    ]
    for (const event of execution) expect(executionCodec.decode(stored(executionCodec.encode(event, "e")))).toEqual(event)

    const claim = { type: "IdempotencyKeyClaimed", executionId: "exe_1", inputHash: "h", claimedAtMs: 5 } as const
    expect(idempotencyCodec.decode(stored(idempotencyCodec.encode(claim, "e")))).toEqual(claim)

    const endpoint: ReadonlyArray<EndpointEvent> = [
      { type: "EndpointCreated", endpointId: "whe_1", projectId: "p", url: "https://x", events: ["trigger.*"], active: true, sealedSecret: "s", secretPrefix: "whsec_a", at: "t" },
      { type: "EndpointUpdated", active: false, at: "t1" },
      { type: "EndpointSecretRotated", sealedSecret: "s2", secretPrefix: "whsec_b", at: "t2" },
      { type: "EndpointDeleted", at: "t3" }
    ]
    for (const event of endpoint) expect(endpointCodec.decode(stored(endpointCodec.encode(event, "e")))).toEqual(event)

    const delivery: ReadonlyArray<DeliveryEvent> = [
      {
        type: "DeliveryQueued",
        deliveryId: "whd_1",
        endpointId: "whe_1",
        projectId: "p",
        eventId: "evt_1",
        eventType: "execution.succeeded",
        source: { streamId: "execution-exe_1", version: 3, position: "1:2" },
        queuedAt: "t"
      },
      { type: "DeliveryAttemptFailed", attemptedAt: "t1", error: "timeout", nextRetryAt: "t2", attempts: [{ attemptedAt: "t1", error: "timeout" }] },
      { type: "DeliveryAttemptFailed", attemptedAt: "t3", statusCode: 500, attempts: [{ attemptedAt: "t1", error: "timeout" }, { attemptedAt: "t3", statusCode: 500 }] },
      { type: "DeliveryAttemptSucceeded", attemptedAt: "t4", statusCode: 204, attempts: [{ attemptedAt: "t4", statusCode: 204 }] },
      { type: "DeliveryGivenUp", at: "t5" },
      { type: "DeliveryAbandoned", at: "t6", reason: "endpoint_deleted" }
    ]
    for (const event of delivery) expect(deliveryCodec.decode(stored(deliveryCodec.encode(event, "e")))).toEqual(event)
  })

  it("refuse data that does not match, naming the stream and the event type", () => {
    const bad = { streamId: "execution-exe_9", type: "ExecutionSucceeded", data: { type: "ExecutionSucceeded", record: { status: "succeeded" } } }
    expect(() => executionCodec.decode(bad)).toThrow(EventDecodeError)
    expect(() => executionCodec.decode(bad)).toThrow(/event ExecutionSucceeded of stream execution-exe_9 \(type execution\) does not decode/)
    // The envelope's type and the data's must agree.
    const claim = { type: "IdempotencyKeyClaimed", executionId: "exe_1", inputHash: "h", claimedAtMs: 5 }
    expect(() => idempotencyCodec.decode({ streamId: "k", type: "Other", data: claim })).toThrow(/names the type IdempotencyKeyClaimed/)
  })

  it("keep a connection's type in the envelope only, as connection events always were", () => {
    const created: ConnectionEvent = {
      type: "ConnectionCreated",
      connectionId: "conn_1",
      projectId: "p",
      userId: "u",
      toolkit: "github",
      authClass: "bearer",
      scopes: ["repo"],
      createdAt: "t",
      credentials: "v1.sealed"
    }
    const encoded = connectionCodec.encode(created, "evt_1")
    expect(encoded.type).toBe("ConnectionCreated")
    expect(encoded.data).not.toHaveProperty("type")
    expect(connectionCodec.decode(stored(encoded))).toEqual(created)
    const deleted = { connectionId: "conn_1", projectId: "p", deletedAt: "t2" }
    expect(connectionCodec.decode({ streamId: "connection-conn_1", type: "ConnectionDeleted", data: deleted })).toEqual({ type: "ConnectionDeleted", ...deleted })
    expect(() => connectionCodec.decode({ streamId: "connection-conn_1", type: "ConnectionRenamed", data: deleted })).toThrow(EventDecodeError)
    expect(() => connectionCodec.decode({ streamId: "connection-conn_1", type: "ConnectionDeleted", data: [1] })).toThrow(/not an object/)
  })
})
