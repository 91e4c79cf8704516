/**
 * A throwaway database for the Postgres measurements, on SERVICE_BENCH_DATABASE_URL or the local
 * server; `undefined` when neither is reachable (the Postgres rows are then skipped).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { Socket } from "node:net"

const ADMIN_URL = process.env.SERVICE_BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

const reachable = (url: string): Promise<boolean> =>
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

const admin = (statement: string) =>
  Effect.runPromise(
    Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe(statement)).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(ADMIN_URL), maxConnections: 1 }))
    )
  )

export interface BenchDatabase {
  readonly url: string
  readonly drop: () => Promise<void>
}

export const createBenchDatabase = async (): Promise<BenchDatabase | undefined> => {
  if (!(await reachable(ADMIN_URL))) return undefined
  const name = `bench_${randomBytes(6).toString("hex")}`
  await admin(`CREATE DATABASE ${name}`)
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => undefined) }
}
