import { describe, expect, it } from "vitest"
import {
  decide,
  type ExecutionCommand,
  type ExecutionEvent,
  type ExecutionRequested,
  type ExecutionState,
  evolve,
  fold,
  toRecord
} from "../../../domain/executions/Execution.ts"
import { StateConflict } from "../../../domain/Errors.ts"
import * as Idempotency from "../../../domain/executions/Idempotency.ts"
import { deciderSpecification } from "../../support/Decider.ts"

const T0 = Date.parse("2026-11-22T10:00:00.000Z")

const requested: ExecutionRequested = {
  type: "ExecutionRequested",
  executionId: "exe_1",
  projectId: "proj_1",
  userId: "user_1",
  tool: "demo.echo",
  toolVersion: "1.0.0",
  catalogVersion: "2026-11-22.1",
  mode: "sync",
  attachments: ["file_a", "file_b"],
  sealedInput: "v1.sealed",
  inputHash: "hash",
  requestedAt: new Date(T0).toISOString()
}

const initialState: ExecutionState = undefined
const given = deciderSpecification({ decide, evolve, initialState })

/** The events of `history` followed by those of each command in turn. */
const events = (history: ReadonlyArray<ExecutionEvent>, ...commands: ReadonlyArray<ExecutionCommand>) =>
  commands.reduce<ReadonlyArray<ExecutionEvent>>((acc, command) => {
    const result = decide(command, fold(acc))
    if (result instanceof StateConflict) throw result
    return [...acc, ...result]
  }, history)

const started = () => events([requested], { _tag: "StartDispatch", now: T0 + 10 })

const VARIANT_FIELDS = ["output", "error", "latencyMs", "cancellation", "completedAt"]
const variantKeys = (record: object) => Object.keys(record).filter((k) => VARIANT_FIELDS.includes(k)).toSorted()

describe("no execution", () => {
  it("a request records ExecutionRequested and a pending record with only base fields", () => {
    const after = given([]).when({ _tag: "RequestExecution", request: requested }).then([requested])
    const record = toRecord(after)
    expect(record?.status).toBe("pending")
    expect(record && variantKeys(record)).toEqual([])
    expect(record?.attachments).toEqual({ count: 2, fileIds: ["file_a", "file_b"] })
    expect(JSON.stringify(record)).not.toContain("sealed")
    expect(JSON.stringify(record)).not.toContain("hash")
  })

  it("any other command is a conflict", () => {
    given([]).when({ _tag: "CancelExecution", now: T0 }).thenFails(StateConflict)
  })
})

describe("pending", () => {
  it("StartDispatch makes it running with startedAt", () => {
    given([requested]).when({ _tag: "StartDispatch", now: T0 + 5 }).then((result, after) => {
      expect(result[0]?.type).toBe("ExecutionStarted")
      expect(toRecord(after)).toMatchObject({ status: "running", startedAt: "2026-11-22T10:00:00.005Z" })
    })
  })

  it("cancel: dispatch had not begun", () => {
    const after = given([requested]).when({ _tag: "CancelExecution", now: T0 + 7 }).then((result) => {
      expect(result[0]).toMatchObject({ type: "ExecutionCancelled", dispatchMayHaveBegun: false })
    })
    const record = toRecord(after)
    expect(record).toMatchObject({
      status: "cancelled",
      cancellation: { dispatchMayHaveBegun: false },
      error: { code: "execution_cancelled", retryable: false },
      latencyMs: 7
    })
    expect(record && variantKeys(record)).toEqual(["cancellation", "completedAt", "error", "latencyMs"])
  })

  it("a second request of the same id is a conflict", () => {
    given([requested]).when({ _tag: "RequestExecution", request: requested }).thenFails(StateConflict)
  })

  it("interrupting a pending execution is refused (it is resumed instead)", () => {
    given([requested]).when({ _tag: "InterruptExecution", now: T0, owner: undefined }).thenFails(StateConflict)
  })
})

describe("running", () => {
  it("success records output and latency from dispatch", () => {
    given(started()).when({ _tag: "CompleteExecution", now: T0 + 30, output: { a: 1 } }).then((_, after) => {
      const record = toRecord(after)
      expect(record).toMatchObject({ status: "succeeded", output: { a: 1 }, latencyMs: 20, completedAt: "2026-11-22T10:00:00.030Z" })
      expect(record && variantKeys(record)).toEqual(["completedAt", "latencyMs", "output"])
    })
  })

  it("failure records the normalized error", () => {
    const error = { code: "rate_limited" as const, message: "slow down", retryable: true, retryAfter: 3 }
    given(started()).when({ _tag: "FailExecution", now: T0 + 11, error }).then((result, after) => {
      expect(result[0]?.type).toBe("ExecutionFailed")
      expect(toRecord(after)).toMatchObject({ status: "failed", error })
    })
  })

  it("cancel: dispatch may have begun", () => {
    given(started()).when({ _tag: "CancelExecution", now: T0 + 20 }).then((result, after) => {
      expect(result[0]).toMatchObject({ dispatchMayHaveBegun: true })
      expect(toRecord(after)).toMatchObject({ status: "cancelled", cancellation: { dispatchMayHaveBegun: true } })
    })
  })

  it("restart interruption fails it with execution_interrupted (retryable)", () => {
    given(started()).when({ _tag: "InterruptExecution", now: T0 + 50, owner: undefined }).then((_, after) => {
      expect(toRecord(after)).toMatchObject({ status: "failed", error: { code: "execution_interrupted", retryable: true } })
    })
  })

  it("terminal events carry the full public record", () => {
    given(started()).when({ _tag: "CompleteExecution", now: T0 + 30, output: "x" }).then((result) => {
      expect(result[0]).toMatchObject({ record: { executionId: "exe_1", status: "succeeded", output: "x" } })
    })
  })
})

describe.each([
  ["succeeded", { _tag: "CompleteExecution", now: T0 + 30, output: 1 } as const],
  ["failed", { _tag: "FailExecution", now: T0 + 30, error: { code: "provider_error", message: "no", retryable: false } } as const]
])("%s", (_status, terminal) => {
  it("cancel is a StateConflict (409)", () => {
    given(events(started(), terminal)).when({ _tag: "CancelExecution", now: T0 + 40 }).thenFails(StateConflict)
  })

  it("completion again is a conflict (a lost race)", () => {
    given(events(started(), terminal)).when(terminal).thenFails(StateConflict)
  })
})

describe("cancelled", () => {
  const cancelled = () => events(started(), { _tag: "CancelExecution", now: T0 + 20 })

  it("cancel again produces nothing and the record stays unchanged", () => {
    const after = given(cancelled()).when({ _tag: "CancelExecution", now: T0 + 99 }).thenNothingHappened()
    expect(toRecord(after)).toEqual(toRecord(fold(cancelled())))
  })

  it("a late success from the adapter is refused", () => {
    given(cancelled()).when({ _tag: "CompleteExecution", now: T0 + 30, output: 1 }).thenFails(StateConflict)
  })
})

describe("replays", () => {
  it("the first replay records ExecutionReplayed and sets replayed; later ones record nothing", () => {
    const first = given(started()).when({ _tag: "MarkReplayed", now: T0 + 1 }).then((result, after) => {
      expect(result[0]?.type).toBe("ExecutionReplayed")
      expect(toRecord(after)?.replayed).toBe(true)
    })
    const again = decide({ _tag: "MarkReplayed", now: T0 + 2 }, first)
    expect(again).toEqual([])
  })

  it("replayed survives the terminal transition", () => {
    const all = events(started(), { _tag: "MarkReplayed", now: T0 + 1 }, { _tag: "CompleteExecution", now: T0 + 2, output: 1 })
    expect(toRecord(fold(all))).toMatchObject({ status: "succeeded", replayed: true })
  })
})

describe("idempotency keys", () => {
  const claim: Idempotency.IdempotencyKeyClaimed = { type: "IdempotencyKeyClaimed", executionId: "exe_1", inputMac: "m", claimedAtMs: T0 }
  const digest = (mac: string, hash = "unused") => ({ mac, currentMac: () => "unused", hash: () => hash })

  it("an unused key is claimed", () => {
    expect(Idempotency.decide(undefined, digest("m"), T0)).toEqual({ _tag: "Claim" })
  })

  it("the same input within 24 hours replays; another input is a mismatch", () => {
    expect(Idempotency.decide(claim, digest("m"), T0 + 1000)).toEqual({ _tag: "Replay", executionId: "exe_1" })
    expect(Idempotency.decide(claim, digest("other"), T0 + 1000)).toEqual({ _tag: "Mismatch" })
  })

  it("after 24 hours the key can be claimed again", () => {
    expect(Idempotency.decide(claim, digest("other"), T0 + Idempotency.WINDOW_MS)).toEqual({ _tag: "Claim" })
  })

  it("a claim MACed under the secret key itself (before the database had its idempotency key) compares under the current key or, during a rotation, the previous one", () => {
    const computed: Array<string> = []
    const lazy = <A extends string | undefined>(name: string, value: A) => (): A => {
      computed.push(name)
      return value
    }
    const request = (current: string, previous: string | undefined) => ({
      mac: "stable",
      currentMac: lazy("current", current),
      previousMac: lazy("previous", previous),
      hash: lazy("hash", "h")
    })
    expect(Idempotency.decide(claim, request("m", undefined), T0 + 1000)).toEqual({ _tag: "Replay", executionId: "exe_1" })
    expect(computed).toEqual(["current"])
    computed.length = 0
    expect(Idempotency.decide(claim, request("other", "m"), T0 + 1000)).toEqual({ _tag: "Replay", executionId: "exe_1" })
    expect(computed).toEqual(["current", "previous"])
    expect(Idempotency.decide(claim, request("other", "other"), T0 + 1000)).toEqual({ _tag: "Mismatch" })
    expect(Idempotency.decide(claim, request("other", undefined), T0 + 1000)).toEqual({ _tag: "Mismatch" })
    // A claim that carries the stable MAC needs nothing else computed.
    computed.length = 0
    expect(Idempotency.decide({ ...claim, inputMac: "stable" }, request("m", "m"), T0 + 1000)).toEqual({ _tag: "Replay", executionId: "exe_1" })
    expect(computed).toEqual([])
  })

  it("a claim from before input MACs is compared by its plain hash", () => {
    const older: Idempotency.IdempotencyKeyClaimed = { type: "IdempotencyKeyClaimed", executionId: "exe_0", inputHash: "h", claimedAtMs: T0 }
    expect(Idempotency.decide(older, digest("m", "h"), T0 + 1000)).toEqual({ _tag: "Replay", executionId: "exe_0" })
    expect(Idempotency.decide(older, digest("m", "other"), T0 + 1000)).toEqual({ _tag: "Mismatch" })
  })
})

describe("ownership", () => {
  it("the requesting process owns the execution until a process starts it; the record never names an owner", () => {
    const owned = { ...requested, owner: "proc_a" }
    expect(fold([owned])?.owner).toBe("proc_a")
    const adopted = events([owned], { _tag: "StartDispatch", now: T0 + 10, owner: "proc_b" })
    expect(fold(adopted)?.owner).toBe("proc_b")
    const done = events(adopted, { _tag: "CompleteExecution", now: T0 + 20, output: { ok: true } })
    expect(fold(done)?.owner).toBe("proc_b")
    for (const state of [fold([owned]), fold(adopted), fold(done)]) expect(JSON.stringify(state?.record)).not.toMatch(/owner|proc_/)
    // Events from before owners existed name none; a start without an owner keeps the request's.
    expect(fold([requested])?.owner).toBeUndefined()
    expect(fold(events([owned], { _tag: "StartDispatch", now: T0 + 10 }))?.owner).toBe("proc_a")
  })

  it("recovery interrupts only on behalf of the owner it found dead", () => {
    const adopted = events([{ ...requested, owner: "proc_a" }], { _tag: "StartDispatch", now: T0 + 10, owner: "proc_b" })
    given(adopted).when({ _tag: "InterruptExecution", now: T0 + 20, owner: "proc_a" }).thenFails(StateConflict)
    given(adopted).when({ _tag: "InterruptExecution", now: T0 + 20, owner: "proc_b" }).then((interrupted) => {
      expect(interrupted).toMatchObject([{ type: "ExecutionFailed", record: { error: { code: "execution_interrupted" } } }])
    })
  })
})
