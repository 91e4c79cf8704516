/**
 * Executions as the API and the MCP gateway use them (decisions.md section 3): validation,
 * connection and attachment checks, idempotency, concurrency caps and the sync wait, in front
 * of the Execution actor; reads come from the `executions` view.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { hash as digest } from "node:crypto"
import type { ToolDefinition } from "../../domain/catalog/Catalog.ts"
import { catalogVersion, decodeClosed, findTool, listTools, toCanonicalName } from "../../domain/catalog/index.ts"
import { unstorable, unstorableMessage } from "../../domain/Storable.ts"
import * as Idempotency from "../../domain/executions/Idempotency.ts"
import type { ExecutionMode, ExecutionRecord, ExecutionStatus } from "../../domain/executions/ExecutionRecord.ts"
import { isoTime } from "../../domain/Time.ts"
import { InvalidInput, NotFound, RateLimited, type StateConflict } from "../../domain/Errors.ts"
import { integer } from "../Settings.ts"
import { EventStore, type AppendRequest, StoreUnavailable } from "../eventlog/EventStore.ts"
import { makeStreamLocks } from "../eventlog/StreamLocks.ts"
import { capOf, ExecutionActor } from "./ExecutionActor.ts"
import { ExecutionPermits } from "./ExecutionPermits.ts"
import { AttachmentFiles, ConnectionResolver } from "./ExecutionPorts.ts"
import { recordOfRow, TABLE } from "./ExecutionsProjection.ts"
import { newId } from "../Ids.ts"
import { BoundedCache } from "../BoundedCache.ts"
import { Secrets } from "../access/Secrets.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"
import type { Filter } from "../eventlog/Projection.ts"
import { Shutdown } from "../actors/Shutdown.ts"

export interface ExecuteCommand {
  readonly projectId: string
  readonly userId: string
  readonly tool: string
  readonly input: unknown
  readonly mode: ExecutionMode | undefined
  readonly connectionId: string | undefined
  readonly attachments: ReadonlyArray<string> | undefined
  readonly idempotencyKey: string | undefined
  /**
   * How long a sync execute waits for its terminal record, in place of
   * SERVICE_EXECUTE_SYNC_WAIT_MS; 0 answers the record as created (the MCP gateway waits itself,
   * so that the wait can be cancelled: mcp/CallCancels.ts).
   */
  readonly syncWaitMs?: number
}

export interface ExecuteResult {
  readonly record: ExecutionRecord
  /** True when the record is terminal (200), false when the caller should poll (202). */
  readonly terminal: boolean
}

export interface ListOptions {
  readonly projectId: string
  readonly userId: string | undefined
  readonly status: ExecutionStatus | undefined
  readonly tool: string | undefined
  /** Keyset position: the last execution id of the previous page. */
  readonly after: string | undefined
  readonly limit: number
}

export type ExecuteFailure = InvalidInput | RateLimited

export class Executions extends Context.Service<Executions, {
  readonly execute: (command: ExecuteCommand) => Effect.Effect<ExecuteResult, ExecuteFailure>
  readonly list: (options: ListOptions) => Effect.Effect<{ readonly executions: ReadonlyArray<ExecutionRecord>; readonly more: boolean }, InvalidInput>
  /**
   * One record of the project; a caller acting for one user (a pinned key, or an unpinned key
   * naming the user) sees only theirs (others are 404).
   */
  readonly get: (projectId: string, actingUserId: string | undefined, executionId: string) => Effect.Effect<ExecutionRecord, NotFound>
  readonly cancel: (projectId: string, actingUserId: string | undefined, executionId: string) => Effect.Effect<ExecutionRecord, NotFound | StateConflict>
  /** The terminal record, or the current one after `timeoutMs` (MCP tasks/result, client waits). */
  readonly awaitTerminal: (
    projectId: string,
    pinnedUserId: string | undefined,
    executionId: string,
    timeoutMs: number
  ) => Effect.Effect<ExecutionRecord, NotFound>
}>()("app/infra/Executions") {}

/** Canonical JSON: object keys sorted, so equal inputs hash equally whatever their key order. */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).toSorted(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

const sha256 = (text: string) => digest("sha256", text, "hex")

/**
 * The text an idempotency claim compares: the tool, its canonical input and the set of files it
 * may read (sorted, without repeats; none adds nothing, so claims made before attachments
 * counted still compare equal when they had none).
 */
const claimText = (tool: string, input: unknown, attachments: ReadonlyArray<string> = []) => {
  const base = `${tool}\u0000${canonicalJson(input)}`
  return attachments.length === 0 ? base : `${base}\u0000${[...new Set(attachments)].toSorted().join(",")}`
}

const keyStream = (projectId: string, userId: string, key: string) =>
  `idempotency-${sha256(`${projectId}\u0000${userId}\u0000${key}`)}`

const MAX_CLAIM_ATTEMPTS = 16

// One closed decoder per tool, built on first use instead of per request.
const decoders = new Map<ToolDefinition, (input: unknown) => Effect.Effect<unknown, InvalidInput>>()
const decodeInput = (tool: ToolDefinition, input: unknown) => {
  let decode = decoders.get(tool)
  if (decode === undefined) {
    decode = decodeClosed(tool.input, `Invalid input for ${tool.name}`)
    decoders.set(tool, decode)
  }
  return decode(input)
}

/** A storage fault is not the caller's: it becomes a defect (500 envelope) at the edge. */
const orDie = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, StoreUnavailable>, R> =>
  effect.pipe(Effect.catchIf((e): e is E => e instanceof StoreUnavailable, (e) => Effect.die(e))) as Effect.Effect<
    A,
    Exclude<E, StoreUnavailable>,
    R
  >

const capFull = (tool: ToolDefinition) =>
  Effect.fail(new RateLimited({ message: `The ${tool.toolkit} concurrency limit of this project is full.`, retryAfter: 1 }))

const isTerminal = (record: ExecutionRecord) =>
  record.status === "succeeded" || record.status === "failed" || record.status === "cancelled"

/** SERVICE_EXECUTE_SYNC_WAIT_MS: how long a sync execute waits for a terminal record. */
export const syncWaitSetting = integer("SERVICE_EXECUTE_SYNC_WAIT_MS", 60_000, 0, 3_600_000)

/** An unknown tool's refusal names the catalog's tools (canonical names; wire names work too). */
export const unknownToolMessage = (name: string) =>
  `Unknown tool ${JSON.stringify(name)}; the catalog's tools are ${listTools().map((tool) => tool.name).join(", ")}.`

export const make = Effect.gen(function*() {
  const syncWaitMs = yield* syncWaitSetting
  const store = yield* EventStore
  const views = yield* ViewStore
  const actor = yield* ExecutionActor
  const permits = yield* ExecutionPermits
  const shutdown = yield* Shutdown
  const connections = yield* ConnectionResolver
  const files = yield* AttachmentFiles
  const secrets = yield* Secrets
  // Idempotency keys known to be claimed (by this process, or found claimed by a conflict).
  const claimedKeys = new BoundedCache<string, true>({ maxWeight: 20_000, ttlMs: 10 * 60_000 })
  const keyLocks = makeStreamLocks()

  const answer = Effect.fnUntraced(function*(record: ExecutionRecord, waitMs: number | undefined) {
    if (waitMs === undefined || waitMs === 0 || isTerminal(record)) return { record, terminal: isTerminal(record) }
    const latest = (yield* orDie(actor.awaitTerminal(record.executionId, waitMs))) ?? record
    return { record: latest, terminal: isTerminal(latest) }
  })

  const validate = Effect.fnUntraced(function*(command: ExecuteCommand) {
    const tool = findTool(command.tool)
    if (tool === undefined) return yield* new InvalidInput({ message: unknownToolMessage(command.tool) })
    const input = command.input ?? {}
    // The HTTP edge refuses such bodies already; the MCP gateway's arguments come through here.
    const unfit = unstorable(input)
    if (unfit !== undefined) return yield* new InvalidInput({ message: `The input ${unstorableMessage[unfit]}.` })
    const decoded = yield* decodeInput(tool, input)
    // An empty list attaches nothing: the record then has no attachments, as without the field.
    const attachments = command.attachments === undefined || command.attachments.length === 0 ? undefined : [...new Set(command.attachments)]
    if (attachments !== undefined) {
      const missing = yield* files.missing(command.projectId, attachments)
      if (missing.length > 0) {
        return yield* new InvalidInput({ message: `Attachments not found: ${missing.join(", ")}.` })
      }
    }
    const connection = yield* connections.resolve({
      projectId: command.projectId,
      userId: command.userId,
      toolkit: tool.toolkit,
      connectionId: command.connectionId,
      scopes: tool.scopes
    })
    return { tool, input, decoded, attachments, connection }
  })

  /**
   * One try at claiming the key (if any) and recording the execution: its record (or the one
   * the key already names), or undefined when another request claimed the key first.
   */
  const claimAndRecord = Effect.fnUntraced(function*(
    command: ExecuteCommand,
    validated: Effect.Success<ReturnType<typeof validate>>,
    mode: ExecutionMode,
    requestedSync: boolean,
    claimStream: string | undefined,
    attempt: number
  ): Effect.fn.Return<ExecutionRecord | undefined, ExecuteFailure> {
    const { tool, input, decoded, attachments, connection } = validated
    const now = yield* Clock.currentTimeMillis
    const alongside: Array<AppendRequest> = []
    const executionId = newId("exe")
    if (claimStream !== undefined) {
      const text = claimText(tool.name, input, attachments)
      const compared = {
        // Under the database's idempotency key, which outlives a rotation (DurableSecrets.ts);
        // claims made before it existed carry the MAC under the secret key (or the previous one).
        mac: secrets.stableMac("idempotency-input/v1", text),
        currentMac: () => secrets.mac("idempotency-input/v1", text),
        previousMac: () => secrets.previousMac("idempotency-input/v1", text),
        // The plain SHA-256 older claims carry (Idempotency.ts); new claims carry a MAC.
        hash: () => sha256(text)
      }
      // A key this process has not seen claimed is taken as new on the first attempt, unread:
      // a fresh key (the common case) costs no read before its commit. One claimed elsewhere
      // makes that commit conflict, once: the next attempt reads the claim and replays or
      // refuses, and the key is remembered, so its later replays read first and never cost a
      // commit of everyone's appends again.
      const unread = attempt === 0 && claimedKeys.get(claimStream, now) === undefined
      const claims = unread ? [] : yield* orDie(store.readStream(claimStream))
      const state = claims.reduce<Idempotency.IdempotencyState>(
        (s, e) => Idempotency.evolve(s, Idempotency.idempotencyCodec.decode(e)),
        undefined
      )
      const decision = Idempotency.decide(state, compared, now)
      if (decision._tag === "Mismatch") {
        return yield* new InvalidInput({ message: "This idempotency key was used with another tool, input or set of attachments." })
      }
      if (decision._tag === "Replay") {
        const record = yield* actor.markReplayed(decision.executionId).pipe(
          Effect.catchTag("NotFound", () => Effect.succeed(undefined)),
          orDie
        )
        if (record !== undefined) return record
        // The execution the key names is gone: memory mode's retention window
        // (SERVICE_MEMORY_RETENTION_MS) is shorter than the key's. The key is then as good as
        // expired, and this request claims it anew.
      }
      const claim: Idempotency.IdempotencyKeyClaimed = { type: "IdempotencyKeyClaimed", executionId, inputMac: compared.mac, claimedAtMs: now }
      alongside.push({
        streamId: claimStream,
        streamType: Idempotency.STREAM_TYPE,
        expectedVersion: claims.length,
        events: [Idempotency.idempotencyCodec.encode(claim, newId("evt"))]
      })
    }
    const cap = capOf(tool)
    const permitKey = { projectId: command.projectId, toolkit: tool.toolkit, executionId }
    // A synchronous request under a cap is refused before allocation when the cap is full
    // (interface.md, Limits), also for a tool that runs async by nature: it then takes its
    // permit here and is dispatched at once, as a sync one is. Not once the process is
    // stopping: such a request is then recorded pending for the next process (it would not
    // start here, ExecutionRun.ts) and answered at once.
    const syncCapped = requestedSync && cap !== undefined && (mode === "sync" || !shutdown.stopping())
    // A pure tool's sync run on a store that checks the cap inside its commit takes no permit
    // before and returns none after (EventStore.appendWithinCap); like any sync request it does
    // not overtake async ones waiting in this process.
    const capInCommit = syncCapped && mode === "sync" && tool.pure && store.appendWithinCap !== undefined
    const permitHeld = !syncCapped
      ? mode === "sync"
      : capInCommit
      ? !permits.queued(permitKey)
      // A grant whose answer the store's bound gave up on may commit all the same: freed later.
      : yield* orDie(permits.tryAcquire(permitKey, cap).pipe(Effect.tapError(() => permits.releaseUnrecorded(permitKey))))
    if (syncCapped && !permitHeld) return yield* capFull(tool)
    // Past the refusal above, a capped sync request holds the permit it took, unless its commit
    // checks the cap; that permit goes back here when nothing is recorded.
    const tookPermit = syncCapped && !capInCommit
    // Uninterruptible: a client hanging up must not leave a recorded execution undispatched.
    const created = yield* Effect.uninterruptible(actor.execute({
      request: requestOf(command, tool, mode, executionId, now, attachments, connection.connectionId,
        // Kept only when the execution may wait for a permit (recovery dispatches it then).
        permitHeld ? undefined : secrets.seal(canonicalJson(input))),
      plan: { tool, input: decoded, credentials: connection.credentials, permitHeld, capInCommit },
      alongside
    })).pipe(
      Effect.map((record) => ({ record })),
      Effect.catchTag("ConcurrencyConflict", () => Effect.succeed(undefined)),
      Effect.catchTag("LaneFull", () => capFull(tool)),
      // Nothing was recorded: the permit taken for it goes back at once (after the store
      // answers again, when it is away).
      Effect.onError(() => (tookPermit ? permits.releaseUnrecorded(permitKey) : Effect.void)),
      orDie
    )
    if (claimStream !== undefined) claimedKeys.set(claimStream, true, now)
    if (created === undefined) {
      // Another request claimed the key first: release and read the claim again.
      if (tookPermit) yield* permits.release(permitKey)
      return undefined
    }
    return created.record
  })

  const execute = Effect.fnUntraced(function*(command: ExecuteCommand): Effect.fn.Return<ExecuteResult, ExecuteFailure> {
    const validated = yield* validate(command)
    const { tool } = validated
    const requestedSync = (command.mode ?? "sync") === "sync"
    const mode: ExecutionMode = tool.asyncByNature ? "async" : (command.mode ?? "sync")
    const waitMs = requestedSync ? (command.syncWaitMs ?? syncWaitMs) : undefined
    const claimStream = command.idempotencyKey === undefined
      ? undefined
      : keyStream(command.projectId, command.userId, command.idempotencyKey)

    for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS; attempt++) {
      const once = claimAndRecord(command, validated, mode, requestedSync, claimStream, attempt)
      // Requests with one key take turns in this process: a later one reads the claim the first
      // one committed and replays, instead of taking a permit of the cap for the same execution
      // (eight at once under a cap of four answered four 429s). Across processes the claim's
      // commit still decides.
      const recorded = yield* (claimStream === undefined ? once : keyLocks([claimStream], once))
      if (recorded !== undefined) return yield* answer(recorded, waitMs)
    }
    return yield* Effect.die(new Error("idempotency claim kept conflicting"))
  })

  const readRow = (projectId: string, executionId: string) =>
    Effect.map(orDie(views.get(TABLE, { project_id: projectId, execution_id: executionId })), (row) =>
      row === undefined ? undefined : recordOfRow(row))

  const get = (projectId: string, actingUserId: string | undefined, executionId: string) =>
    Effect.flatMap(readRow(projectId, executionId), (record) =>
      record === undefined || (actingUserId !== undefined && record.userId !== actingUserId)
        ? Effect.fail(new NotFound({ message: `Execution ${executionId} was not found.` }))
        : Effect.succeed(record))

  return Executions.of({
    execute,
    get,
    cancel: (projectId, actingUserId, executionId) =>
      Effect.flatMap(get(projectId, actingUserId, executionId), () => orDie(actor.cancel(executionId))),
    awaitTerminal: (projectId, pinnedUserId, executionId, timeoutMs) =>
      Effect.flatMap(get(projectId, pinnedUserId, executionId), (record) =>
        isTerminal(record)
          ? Effect.succeed(record)
          : Effect.map(orDie(actor.awaitTerminal(executionId, timeoutMs)), (latest) => latest ?? record)),
    list: Effect.fnUntraced(function*(options) {
      const where: Array<Filter> = [{ column: "project_id", op: "=", value: options.projectId }]
      if (options.userId !== undefined) where.push({ column: "user_id", op: "=", value: options.userId })
      if (options.status !== undefined) where.push({ column: "status", op: "=", value: options.status })
      if (options.tool !== undefined) {
        const canonical = toCanonicalName(options.tool)
        if (canonical === undefined) return yield* new InvalidInput({ message: "tool must be a canonical or wire tool name." })
        where.push({ column: "tool", op: "=", value: canonical })
      }
      const rows = yield* orDie(views.list(TABLE, {
        where,
        orderBy: [{ column: "execution_id", direction: "desc" }],
        after: options.after === undefined ? undefined : [options.after],
        limit: options.limit + 1
      }))
      return {
        executions: rows.slice(0, options.limit).map(recordOfRow),
        more: rows.length > options.limit
      }
    })
  })
})

const requestOf = (
  command: ExecuteCommand,
  tool: ToolDefinition,
  mode: ExecutionMode,
  executionId: string,
  now: number,
  attachments: ReadonlyArray<string> | undefined,
  connectionId: string | undefined,
  sealedInput: string | undefined
) => ({
  executionId,
  projectId: command.projectId,
  userId: command.userId,
  tool: tool.name,
  toolVersion: tool.version,
  catalogVersion,
  mode,
  ...(connectionId !== undefined ? { connectionId } : {}),
  ...(attachments !== undefined ? { attachments } : {}),
  ...(sealedInput !== undefined ? { sealedInput } : {}),
  requestedAt: isoTime(now)
})

export const layer = Layer.effect(Executions, make)
