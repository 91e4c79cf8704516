/**
 * Effect Cluster's `Sharding` as the service once wired it (it hosted no entity), kept for the
 * benchmarks that weighed hosting the actors on it (bench/placement/, docs/architecture.md,
 * "Actors"); the service itself runs its actors on Postgres leases (infra/actors/).
 *
 * - no database: everything in this process and in memory (the `TestRunner` wiring);
 * - database, no `SERVICE_RUNNER_ADDRESS`: one runner whose shard locks, runner row and (for
 *   persisted messages) mailbox live in Postgres (the `SingleRunner` wiring);
 * - database and `SERVICE_RUNNER_ADDRESS`: a runner that listens on that address and shares the
 *   shards with every other process on the same database (the `NodeClusterSocket` wiring);
 *   shards are held by Postgres advisory locks, so an entity id has one owner at a time.
 *
 * The wirings are assembled here rather than taken from `SingleRunner.layer` /
 * `NodeClusterSocket.layer` because those read `ShardingConfig` from the process environment
 * (constant case: `HOST`, `PORT`, `SHARDS_PER_GROUP`, ...), so an unrelated `PORT=...` would
 * change or break the runtime.
 *
 * The cluster creates its own tables (`cluster_runners`, `cluster_locks`, `cluster_messages`,
 * `cluster_replies` and their migration histories `cluster_runner_migrations`,
 * `cluster_migrations`) when the SQL storage layers start; they need no entry in
 * `allMigrations`.
 */
import { NodeClusterSocket, NodeCrypto } from "@effect/platform-node"
import { Duration, Effect, Layer, Option } from "effect"
import {
  MessageStorage,
  RunnerAddress,
  RunnerHealth,
  Runners,
  RunnerStorage,
  Sharding,
  ShardingConfig,
  SocketRunner,
  SqlMessageStorage,
  SqlRunnerStorage
} from "effect/cluster"
import { RpcSerialization } from "effect/rpc"
import { SqlClient } from "effect/sql"

/** What the runtime provides: enough for `Entity.toLayer` and `Entity.client`. */
export type ActorServices = Sharding.Sharding | Runners.Runners | MessageStorage.MessageStorage

/** Shards per group; every runner on one database must use the same number. */
export const SHARDS_PER_GROUP = 300

/** The address used as this runner's identity when it does not listen (memory, single runner). */
const LOCAL_RUNNER = RunnerAddress.RunnerAddress.make({ host: "localhost", port: 34431 })

/**
 * The cluster configuration, identical in every mode except for the runner address.
 * Values every runner on one database must agree on: `shardsPerGroup` and the shard groups.
 */
export const shardingConfig = (
  runnerAddress: RunnerAddress.RunnerAddress
): ShardingConfig.ShardingConfig["Service"] => ({
  ...ShardingConfig.defaults,
  runnerAddress: Option.some(runnerAddress),
  runnerListenAddress: Option.none(),
  // The cluster default. Changing it moves entity ids between shards, so it is fixed.
  shardsPerGroup: SHARDS_PER_GROUP,
  // An entity that has received no message for this long is stopped and its memory freed; the
  // next message starts it again and it reloads from the event log. An entity is never idle
  // while a handler runs. Feature entities may pass their own `maxIdleTime` to `toLayer`
  // (shorter for short-lived kinds such as a single delivery).
  entityMaxIdleTime: Duration.minutes(1),
  // A resident entity costs about 15 kB of heap (bench/scenarios/actors.ts), so this caps the
  // runtime at about 750 MB. When it is reached, volatile sends to entities that are not
  // resident fail with MailboxFull until idle ones are reaped; the default (10 000) would be
  // reached within seconds at thousands of new entities per second.
  maxResidentEntities: 50_000,
  entityMailboxCapacity: 4096,
  entityTerminationTimeout: Duration.seconds(10),
  // A runner whose process is killed loses its advisory locks at once (its Postgres session
  // ends); these bound how long a frozen runner keeps its shards and how fast the others
  // notice that a runner is gone.
  shardLockRefreshInterval: Duration.seconds(5),
  shardLockExpiration: Duration.seconds(20),
  refreshAssignmentsInterval: Duration.seconds(2),
  runnerHealthCheckInterval: Duration.seconds(5),
  // Local messages go through the same encode/decode as remote ones, so a payload that cannot
  // cross a process boundary fails in memory mode and in tests too.
  simulateRemoteSerialization: true
})

/** In this process, in memory: no database, no network. `overrides` are for tests and benchmarks. */
export const layerMemoryWith = (
  overrides: Partial<ShardingConfig.ShardingConfig["Service"]>
): Layer.Layer<ActorServices> =>
  Sharding.layer.pipe(
    Layer.provideMerge(Runners.layerNoop),
    Layer.provideMerge(MessageStorage.layerMemory),
    Layer.provide([RunnerStorage.layerMemory, RunnerHealth.layerNoop]),
    Layer.provide(Layer.succeed(ShardingConfig.ShardingConfig, { ...shardingConfig(LOCAL_RUNNER), ...overrides }))
  )

/** In this process, in memory: no database, no network. */
export const layerMemory: Layer.Layer<ActorServices> = layerMemoryWith({})

/**
 * Refuses a mix that would hang: a single runner believes it owns every shard, so a second
 * single runner, or a single runner next to socket runners, on the same database would wait
 * forever for shard locks it cannot get. A single runner holds this lock exclusively, socket
 * runners share it; a process that cannot take it logs why and waits (a previous process that
 * is shutting down or was killed releases it within seconds).
 */
const RUNNER_MODE_LOCK = 7_100_900

const runnerModeGuard = (mode: "single" | "shared"): Layer.Layer<never, never, SqlClient.SqlClient> =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const conn = yield* sql.reserve
      yield* Effect.addFinalizer(() =>
        Effect.ignore(conn.executeRaw(`SELECT pg_advisory_unlock_all()`, []))
      )
      const take = mode === "single" ? "pg_try_advisory_lock" : "pg_try_advisory_lock_shared"
      let waited = 0
      while (true) {
        const rows = yield* conn.executeValues(`SELECT ${take}(${RUNNER_MODE_LOCK})`, [])
        if (rows[0]?.[0] === true) return
        if (waited % 10 === 0) {
          yield* Effect.logError(
            mode === "single"
              ? "another actor runner uses this database: set SERVICE_RUNNER_ADDRESS on every process that shares it; waiting"
              : "a process without SERVICE_RUNNER_ADDRESS uses this database as its single actor runner; waiting"
          )
        }
        waited++
        yield* Effect.sleep(Duration.seconds(1))
      }
    }).pipe(Effect.orDie)
  )

/** One runner on Postgres: shard locks, runner registration and persisted messages in SQL. */
export const layerSingle: Layer.Layer<ActorServices, never, SqlClient.SqlClient> = Sharding.layer.pipe(
  Layer.provideMerge(Runners.layerNoop),
  Layer.provideMerge(SqlMessageStorage.layer),
  Layer.provide([Layer.orDie(SqlRunnerStorage.layer), RunnerHealth.layerNoop, NodeCrypto.layerDigest]),
  Layer.provide(Layer.succeed(ShardingConfig.ShardingConfig, shardingConfig(LOCAL_RUNNER))),
  Layer.provide(runnerModeGuard("single"))
)

/**
 * One of several runners on one Postgres: listens on `address` (TCP, binary RPC) for messages
 * from the other runners and pings them to detect the dead ones.
 */
export const layerRunner = (
  address: { readonly host: string; readonly port: number }
): Layer.Layer<ActorServices, never, SqlClient.SqlClient> =>
  SocketRunner.layer.pipe(
    Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc))),
    Layer.provide([NodeClusterSocket.layerSocketServer, NodeClusterSocket.layerClientProtocol]),
    Layer.provideMerge(SqlMessageStorage.layer.pipe(Layer.provide(NodeCrypto.layerDigest))),
    Layer.provide(Layer.orDie(SqlRunnerStorage.layer)),
    Layer.provide(
      Layer.succeed(ShardingConfig.ShardingConfig, shardingConfig(RunnerAddress.RunnerAddress.make(address)))
    ),
    Layer.provide(RpcSerialization.layerSchemaBinary()),
    Layer.provide(runnerModeGuard("shared")),
    // A runner that cannot listen on its address cannot take part: stop the process.
    Layer.orDie
  )

export const ActorRuntime = {
  layerMemory,
  layerMemoryWith,
  layerSingle,
  layerRunner,
  shardingConfig
} as const
