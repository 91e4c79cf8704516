/**
 * Durable tests get a database of their own on the Postgres named by SERVICE_TEST_DATABASE_URL.
 * In CI (CI set) Postgres is required: an unreachable server fails the run. Elsewhere the durable
 * suites skip with a loud message.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { Socket } from "node:net"

export const TEST_DATABASE_URL = process.env.SERVICE_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

/** Whether a TCP connection to the server of `url` opens within a second. */
export const reachable = (url: string): Promise<boolean> =>
  new Promise((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = new Socket()
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1000, () => done(false))
    socket.once("error", () => done(false))
    socket.connect(Number(port || 5432), hostname || "127.0.0.1", () => done(true))
  })

export const postgresAvailable: boolean = await (async () => {
  const ok = await reachable(TEST_DATABASE_URL)
  if (!ok) {
    if (process.env.CI) throw new Error(`CI requires Postgres at ${TEST_DATABASE_URL}, and it is not reachable`)
    process.stderr.write(`\n*** Postgres at ${TEST_DATABASE_URL} is not reachable: DURABLE TESTS ARE SKIPPED ***\n\n`)
  }
  return ok
})()

/** Runs `effect` on the database at `url` over a connection of its own. */
const runOn = <A>(url: string, effect: Effect.Effect<A, unknown, PgClient.PgClient>) =>
  Effect.runPromise(effect.pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))))

const run = <A>(effect: Effect.Effect<A, unknown, PgClient.PgClient>) => runOn(TEST_DATABASE_URL, effect)

/** Runs one statement on the database at `url` over a connection of its own. */
export const runSql = <A extends object = Record<string, unknown>>(url: string, text: string): Promise<ReadonlyArray<A>> =>
  runOn(url, Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe<A>(text)))

/** Creates an empty database and returns its URL. */
export const createTestDatabase = async (prefix = "t"): Promise<string> => {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`
  await run(Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe(`CREATE DATABASE ${name}`)))
  const url = new URL(TEST_DATABASE_URL)
  url.pathname = `/${name}`
  return url.toString()
}

export const dropTestDatabase = async (url: string): Promise<void> => {
  const name = new URL(url).pathname.slice(1)
  await run(Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)))
}

/** A PgClient layer on a fresh database, dropped when the layer is released. */
export const freshDatabaseLayer = (options?: { readonly maxConnections?: number }) =>
  Layer.unwrap(
    Effect.acquireRelease(
      Effect.promise(() => createTestDatabase()),
      (url) => Effect.promise(() => dropTestDatabase(url))
    ).pipe(
      Effect.map((url) => PgClient.layer({ url: Redacted.make(url), maxConnections: options?.maxConnections ?? 10 }))
    )
  )

/**
 * The environment that puts a service on `mode`'s store: a fresh database (named from `prefix`)
 * and a secret key for "postgres" when Postgres is reachable; nothing (memory) otherwise.
 */
export const storeEnv = async (mode: "memory" | "postgres", prefix: string): Promise<Record<string, string>> =>
  mode === "postgres" && postgresAvailable
    ? { SERVICE_DATABASE_URL: await createTestDatabase(prefix), SERVICE_SECRET_KEY: Buffer.alloc(32, 5).toString("base64") }
    : {}

/**
 * Runs `statement` in a transaction on a connection of its own and keeps the transaction open
 * (with its row locks) until `release` is called, which commits it.
 */
export const holdInTransaction = async (url: string, statement: string): Promise<{ readonly release: () => Promise<void> }> => {
  let release = () => {}
  const released = new Promise<void>((resolve) => (release = resolve))
  let held = () => {}
  const holding = new Promise<void>((resolve) => (held = resolve))
  const done = runOn(url, Effect.flatMap(PgClient.PgClient, (sql) =>
    sql.withTransaction(Effect.gen(function*() {
      yield* sql.unsafe(statement)
      held()
      yield* Effect.promise(() => released)
    }))))
  await Promise.race([holding, done])
  return {
    release: () => {
      release()
      return done.then(() => undefined)
    }
  }
}
