/**
 * A throwaway database for the Postgres measurements, on SERVICE_BENCH_DATABASE_URL or the local
 * server; `undefined` when neither is reachable (the Postgres rows are then skipped).
 */
import { randomBytes } from "node:crypto"
import { reachable, runSql } from "../test/support/Database.ts"

const ADMIN_URL = process.env.SERVICE_BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

const admin = (statement: string) => runSql(ADMIN_URL, statement)

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
