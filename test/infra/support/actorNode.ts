/**
 * A runner process for the multi-process actor tests: the actor runtime chosen from the SERVICE_*
 * environment (as the service does), the counter entity, and a tiny HTTP control endpoint on
 * ACTOR_CONTROL_PORT:
 *   GET /increment?id=<entity>&amount=<n>&delayMs=<ms>  -> {"value":..,"pid":..}
 *   GET /get?id=<entity>                                 -> {"value":..,"pid":..}
 *   GET /shards                                          -> {"held":<shards this runner holds>,"pid":..}
 * Prints "actor node ready" once the runtime is up. SIGTERM shuts it down cleanly.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, ManagedRuntime } from "effect"
import { Sharding, ShardId } from "effect/cluster"
import { createServer } from "node:http"
import { ActorRuntime, SHARDS_PER_GROUP } from "../../../infra/actors/Actors.ts"
import { AppConfig } from "../../../src/Config.ts"
import { Counter, CounterLive } from "./CounterEntity.ts"

const controlPort = Number(process.env.ACTOR_CONTROL_PORT ?? "0")

const Database = Layer.unwrap(
  Effect.map(AppConfig, (config) =>
    config.databaseUrl === undefined ? Layer.empty : PgClient.layer({ url: config.databaseUrl, maxConnections: 8 }))
)

const Live = CounterLive.pipe(
  Layer.provideMerge(ActorRuntime.layer),
  Layer.provide(Database),
  Layer.provideMerge(AppConfig.layerEnv)
)

const runtime = ManagedRuntime.make(Live)

const int = (value: string | null, fallback: number) => (value === null ? fallback : Number.parseInt(value, 10))

const server = createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://localhost")
  const id = url.searchParams.get("id") ?? "counter"
  const call = Effect.gen(function*() {
    if (url.pathname === "/shards") {
      const sharding = yield* Sharding.Sharding
      let held = 0
      for (let shard = 1; shard <= SHARDS_PER_GROUP; shard++) if (sharding.hasShardId(ShardId.make("default", shard))) held++
      return { held, pid: process.pid }
    }
    const counter = (yield* Counter.client)(id)
    if (url.pathname === "/increment") {
      const delayMs = int(url.searchParams.get("delayMs"), 0)
      return yield* counter.Increment({ amount: int(url.searchParams.get("amount"), 1), delayMs })
    }
    if (url.pathname === "/get") return yield* counter.Get()
    return undefined
  })
  runtime.runPromise(call).then(
    (reply) => {
      res.writeHead(reply === undefined ? 404 : 200, { "content-type": "application/json" })
      res.end(JSON.stringify(reply ?? { error: "not found" }))
    },
    (error: unknown) => {
      res.writeHead(500, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: String(error) }))
    }
  )
})

await runtime.runPromise(Effect.void)
server.listen(controlPort, "127.0.0.1", () => {
  process.stdout.write(`actor node ready pid=${process.pid}\n`)
})

process.once("SIGTERM", () => {
  server.close()
  void runtime.dispose().then(() => process.exit(0))
})
