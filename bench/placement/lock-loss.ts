/**
 * The failure model of Effect Cluster shard locks on Postgres, observed: a single runner
 * (`ActorRuntime.layerSingle`, bench/cluster/ClusterRuntime.ts) holds every shard; the backend
 * holding its shard advisory locks is terminated (`pg_terminate_backend`) while the process lives.
 * A "peer" session then tries the terminated session's lock of one shard, as another runner
 * would, and holds it for PROBE_PEER_HOLD_SECONDS. The probe prints a timeline: when the peer got
 * the lock, when the runner noticed (stopped counting the shard as its own), what became of a
 * handler running on that shard, whether new messages to that shard were still served by the old
 * owner, and when the runner held the shard again.
 *
 *   node_modules/.bin/node bench/placement/lock-loss.ts
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Layer, ManagedRuntime, Redacted, Schema } from "effect"
import { Entity, type EntityId, Sharding, ShardId } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { createTestDatabase, dropTestDatabase, runSql } from "../../test/support/Database.ts"
import { ActorRuntime, SHARDS_PER_GROUP } from "../cluster/ClusterRuntime.ts"

const PEER_HOLD_SECONDS = Number(process.env.PROBE_PEER_HOLD_SECONDS ?? 25)

const started = performance.now()
const at = () => `${((performance.now() - started) / 1000).toFixed(2)} s`
const log = (text: string) => process.stdout.write(`[${at()}] ${text}\n`)

const Work = Rpc.make("Work", { payload: { ms: Schema.Int, label: Schema.String }, success: Schema.String })
const Probe = Entity.make("Probe", [Work])
const ProbeLive = Probe.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    return Probe.of({
      Work: ({ payload }) =>
        Effect.gen(function*() {
          log(`handler ${payload.label} starts on ${address.entityId} (${address.shardId.toString()})`)
          yield* Effect.sleep(payload.ms)
          return payload.label
        }).pipe(
          Effect.onInterrupt(() => Effect.sync(() => log(`handler ${payload.label} interrupted`))),
          Effect.tap(() => Effect.sync(() => log(`handler ${payload.label} completes`)))
        )
    })
  }),
  { disableFatalDefects: true }
)

/** `postgresLockNamespace("cluster")` of SqlRunnerStorage.ts: FNV-1a of "effect-cluster:cluster". */
const lockNamespace = (() => {
  const bytes = new TextEncoder().encode("effect-cluster:cluster")
  let hash = 0x811c9dc5
  for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193)
  return hash | 0
})()

const url = await createTestDatabase("lockloss")
const database = new URL(url).pathname.slice(1)
try {
  const runner = ManagedRuntime.make(
    ProbeLive.pipe(
      Layer.provideMerge(ActorRuntime.layerSingle),
      Layer.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 4 }))
    )
  )
  // The peer: one connection, so its session keeps the advisory lock it takes.
  const peer = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
  const sharding = await runner.runPromise(Sharding.Sharding)
  const held = () => {
    let count = 0
    for (let id = 1; id <= SHARDS_PER_GROUP; id++) if (sharding.hasShardId(ShardId.make("default", id))) count++
    return count
  }
  while (held() < SHARDS_PER_GROUP) await new Promise((resolve) => setTimeout(resolve, 100))
  log(`runner holds ${held()} shards`)
  const client = await runner.runPromise(Probe.client)
  const entityId = "victim"
  const shard = sharding.getShardId(entityId as EntityId.EntityId, "default")
  const lockNum = 1_000_000 + shard.id
  // A long handler in flight on the victim's shard.
  const long = runner.runPromise(Effect.exit(client(entityId).Work({ ms: 60_000, label: "long" })))
  void long.then((exit) => log(`caller of "long" gets ${Exit.isSuccess(exit) ? "success" : "failure: " + String(exit.cause).split("\n")[0]}`))
  await new Promise((resolve) => setTimeout(resolve, 500))

  const rows = await runSql<{ pid: number; n: string }>(
    url,
    `SELECT l.pid, count(*)::text AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
     WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND d.datname = '${database}' GROUP BY l.pid`
  )
  const lockPid = rows[0]?.pid
  if (lockPid === undefined) throw new Error("no shard lock session found")
  log(`lock session pid ${lockPid} holds ${rows[0]?.n} shard advisory locks; terminating it`)
  await runSql(url, `SELECT pg_terminate_backend(${lockPid})`)
  const terminatedAt = performance.now()

  // The peer tries the victim shard's lock, as a runner that the shard is assigned to would.
  let peerHas = false
  for (let i = 0; i < 40 && !peerHas; i++) {
    const got = await peer.runPromise(Effect.flatMap(PgClient.PgClient, (sql) =>
      sql.unsafe<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${lockNamespace}, ${lockNum}) AS ok`)))
    peerHas = got[0]?.ok === true
    if (!peerHas) await new Promise((resolve) => setTimeout(resolve, 50))
  }
  log(peerHas ? `peer session holds the lock of ${shard.toString()} (${((performance.now() - terminatedAt) / 1000).toFixed(2)} s after the termination)` : "peer could not take the lock within 2 s")

  // Pings to entities on the victim's shard: who serves them, and when.
  const sameShard: Array<string> = []
  for (let i = 0; sameShard.length < 200; i++) {
    const id = `ping-${i}`
    if (sharding.getShardId(id as EntityId.EntityId, "default").id === shard.id) sameShard.push(id)
  }
  let pingIndex = 0
  const pings = setInterval(() => {
    const id = sameShard[pingIndex++ % sameShard.length]!
    const label = `ping-${pingIndex}`
    void runner.runPromise(Effect.exit(Effect.timeoutOption(client(id).Work({ ms: 1, label }), "1 second"))).then((exit) =>
      Exit.isSuccess(exit) && exit.value._tag === "None" ? log(`${label}: no answer within 1 s (the runner no longer serves the shard)`) : undefined)
  }, 500)

  let noticed = false
  let releasedPeer = false
  let lastCount = -1
  const counts = setInterval(() => {
    const count = held()
    if (count !== lastCount) log(`runner holds ${count} shards`)
    lastCount = count
  }, 250)
  const deadline = terminatedAt + (PEER_HOLD_SECONDS + 30) * 1000
  while (performance.now() < deadline) {
    const mine = sharding.hasShardId(shard)
    if (!noticed && !mine) {
      noticed = true
      log(`runner stopped counting ${shard.toString()} as its own (${held()} shards held now), ${((performance.now() - terminatedAt) / 1000).toFixed(2)} s after the termination`)
    }
    if (noticed && mine) {
      log(`runner holds ${shard.toString()} again (${held()} shards held)`)
      break
    }
    if (!releasedPeer && performance.now() - terminatedAt > PEER_HOLD_SECONDS * 1000) {
      releasedPeer = true
      await peer.runPromise(Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe(`SELECT pg_advisory_unlock_all()`)))
      log("peer released its lock")
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  clearInterval(pings)
  clearInterval(counts)
  await new Promise((resolve) => setTimeout(resolve, 1500))
  await peer.dispose()
  await runner.dispose()
} finally {
  await dropTestDatabase(url)
}
process.exit(0)
