/**
 * Helpers for the executions suites: the two stores to run against, and small request helpers.
 */
import { expect } from "vitest"
import type { Env } from "../../support/Config.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../../support/Database.ts"
import type { Client } from "../../support/Service.ts"

export const SECRET_KEY = Buffer.alloc(32, 7).toString("base64")

/** Generous limits: the suites test the buckets on services of their own. */
export const ROOMY: Env = {
  SERVICE_RATE_LIMIT_EXECUTE_BURST: "100000",
  SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "1000000",
  SERVICE_RATE_LIMIT_REQUEST_BURST: "100000",
  SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1000000"
}

export interface StoreMode {
  readonly name: string
  readonly skip: boolean
  /** The environment of a service on this store, and a cleanup. */
  readonly env: () => Promise<{ readonly env: Env; readonly drop: () => Promise<void> }>
}

export const modes: ReadonlyArray<StoreMode> = [
  { name: "memory", skip: false, env: () => Promise.resolve({ env: {}, drop: () => Promise.resolve() }) },
  {
    name: "postgres",
    skip: !postgresAvailable,
    env: async () => {
      const url = await createTestDatabase("exe")
      return { env: { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY }, drop: () => dropTestDatabase(url) }
    }
  }
]

export type Json = Record<string, unknown>

export const execute = async (client: Client, body: Json, init: { key?: string; headers?: Record<string, string> } = {}) => {
  const response = await client.fetch("/v1/execute", {
    method: "POST",
    json: body,
    ...(init.key !== undefined ? { key: init.key } : {}),
    ...(init.headers !== undefined ? { headers: init.headers } : {})
  })
  return { response, status: response.status, body: (await response.json()) as Json }
}

export const getJson = async (client: Client, path: string, key?: string) => {
  const response = await client.fetch(path, key === undefined ? {} : { key })
  return { response, status: response.status, body: (await response.json()) as Json }
}

export const post = async (client: Client, path: string, key?: string) => {
  const response = await client.fetch(path, { method: "POST", ...(key === undefined ? {} : { key }) })
  return { response, status: response.status, body: (await response.json()) as Json }
}

export const errorCode = (body: Json): unknown => (body.error as Json | undefined)?.code

/** Polls one execution until `done` holds (at most `ms`). */
export const waitFor = async (client: Client, executionId: string, done: (record: Json) => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms
  for (;;) {
    const { body } = await getJson(client, `/v1/executions/${executionId}`)
    if (done(body) || Date.now() > deadline) return body
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

export const terminal = (record: Json) => ["succeeded", "failed", "cancelled"].includes(String(record.status))

const BASE = ["executionId", "projectId", "userId", "tool", "toolVersion", "catalogVersion", "mode", "status", "createdAt"]
const OPTIONAL = ["connectionId", "startedAt", "completedAt", "replayed", "source", "attachments"]
const VARIANT: Record<string, ReadonlyArray<string>> = {
  pending: [],
  running: [],
  succeeded: ["output", "latencyMs"],
  failed: ["error", "latencyMs"],
  cancelled: ["error", "latencyMs", "cancellation"]
}

/** The record has the base fields and exactly its status's variant fields. */
export const expectRecordShape = (record: Json) => {
  const variant = VARIANT[String(record.status)]
  expect(variant).toBeDefined()
  for (const field of BASE) expect(record).toHaveProperty(field)
  const extra = Object.keys(record).filter((k) => !BASE.includes(k) && !OPTIONAL.includes(k)).toSorted()
  expect(extra).toEqual([...(variant ?? [])].toSorted())
  expect(record.executionId).toMatch(/^exe_[0-9a-z]{32}$/)
}
