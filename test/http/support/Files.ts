/**
 * Helpers for the staged-file suites: the two stores to run them on, uploads, envelopes, and
 * direct calls to the execution-bound file service inside an in-process service.
 */
import { Effect } from "effect"
import { expect } from "vitest"
import { StagedFiles, type StagedFilesShape } from "../../../infra/files/StagedFiles.ts"
import type { Env } from "../../support/Config.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../../support/Database.ts"
import { type InProcessService, startService } from "../../support/Service.ts"

export const SECRET_KEY = Buffer.alloc(32, 7).toString("base64")
export const FAST = { SERVICE_RATE_LIMIT_REQUEST_BURST: "100000", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "600000" }

export interface Store {
  readonly name: string
  readonly available: boolean
  /** Starts a service on this store; `close` also drops its database. */
  readonly start: (env?: Env) => Promise<InProcessService>
}

export const stores: ReadonlyArray<Store> = [
  { name: "memory", available: true, start: (env = {}) => startService({ ...FAST, ...env }) },
  {
    name: "postgres",
    available: postgresAvailable,
    start: async (env = {}) => {
      const url = await createTestDatabase("files")
      const service = await startService({ ...FAST, SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY, ...env })
      return {
        ...service,
        close: async () => {
          await service.close()
          await dropTestDatabase(url)
        }
      }
    }
  }
]

export interface Metadata {
  readonly fileId: string
  readonly name: string
  readonly mimeType: string
  readonly size: number
  readonly expiresAt: string
}

export const upload = async (
  service: InProcessService,
  body: { name?: string; content?: string; mimeType?: string },
  key?: string
): Promise<Metadata> => {
  const response = await service.fetch("/v1/files", {
    method: "POST",
    json: { name: "f.bin", content: "", ...body },
    ...(key !== undefined ? { key } : {})
  })
  expect(response.status).toBe(201)
  return (await response.json()) as Metadata
}

export const expectEnvelope = async (response: Response, status: number, code: string) => {
  const text = await response.text()
  expect(response.status, text).toBe(status)
  const body = JSON.parse(text) as { error: { code: string; message: string; retryable: boolean }; requestId: string }
  expect(body.error.code).toBe(code)
  expect(body.requestId).toBe(response.headers.get("request-id"))
  return { body, text }
}

export const withFiles = <A, E>(service: InProcessService, f: (files: StagedFilesShape) => Effect.Effect<A, E>) =>
  service.runtime.runPromise(Effect.flatMap(StagedFiles, f))

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
