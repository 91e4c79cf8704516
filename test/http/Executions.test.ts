/**
 * Executions through HTTP on both stores: execute (sync, async, async by nature), normalized
 * failures, validation, acting user, get and cancel.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EventStore } from "../../infra/eventlog/EventStore.ts"
import { catalogVersion } from "../../domain/catalog/index.ts"
import { type InProcessService, OTHER_KEY, PINNED_KEY, startService } from "../support/Service.ts"
import {
  errorCode,
  execute,
  expectRecordShape,
  getJson,
  type Json,
  modes,
  post,
  ROOMY,
  terminal,
  waitFor
} from "./support/Executions.ts"

for (const mode of modes) {
  describe.skipIf(mode.skip)(`executions on ${mode.name}`, () => {
    let service: InProcessService
    let drop: () => Promise<void>

    beforeAll(async () => {
      const store = await mode.env()
      drop = store.drop
      service = await startService({ ...ROOMY, ...store.env })
    })
    afterAll(async () => {
      await service?.close()
      await drop?.()
    })

    describe("execute", () => {
      it("sync answers 200 with the terminal record, its versions and exactly its variant fields", async () => {
        const { status, body, response } = await execute(service, { tool: "demo.echo", input: { a: 1, b: [true] }, userId: "u_sync" })
        expect(status).toBe(200)
        expect(response.headers.get("location")).toBeNull()
        expect(body).toMatchObject({
          status: "succeeded",
          tool: "demo.echo",
          toolVersion: "1.0.0",
          catalogVersion,
          mode: "sync",
          userId: "u_sync",
          projectId: "proj_test",
          output: { a: 1, b: [true] }
        })
        expectRecordShape(body)
        expect(typeof body.latencyMs).toBe("number")
        expect(body.startedAt).toBeTypeOf("string")
        expect(body.completedAt).toBeTypeOf("string")
      })

      it("async answers 202 with the pending record and a Location, then runs", async () => {
        const { status, body, response } = await execute(service, { tool: "demo.echo", input: { x: 1 }, userId: "u_async", mode: "async" })
        expect(status).toBe(202)
        expect(body.status).toBe("pending")
        expectRecordShape(body)
        expect(response.headers.get("location")).toBe(`/v1/executions/${String(body.executionId)}`)
        const done = await waitFor(service, String(body.executionId), terminal)
        expect(done).toMatchObject({ status: "succeeded", output: { x: 1 }, mode: "async" })
        expectRecordShape(done)
      })

      it("a tool async by nature runs async and the sync request waits for it", async () => {
        const { status, body } = await execute(service, { tool: "demo.sleep", input: { ms: 50 }, userId: "u_nature" })
        expect(status).toBe(200)
        expect(body).toMatchObject({ status: "succeeded", mode: "async", output: { sleptMs: 50 } })
      })

      it("accepts the wire name and records the canonical one", async () => {
        const { status, body } = await execute(service, { tool: "demo__echo", userId: "u_wire" })
        expect(status).toBe(200)
        expect(body).toMatchObject({ tool: "demo.echo", output: {} })
      })

      it.each([
        ["provider_error", false, undefined],
        ["provider_unavailable", true, undefined],
        ["timeout", true, undefined],
        ["rate_limited", true, 7]
      ])("demo.fail %s: 200 with the failed record", async (code, retryable, retryAfter) => {
        const input = retryAfter === undefined ? { code } : { code, retryAfter }
        const { status, body } = await execute(service, { tool: "demo.fail", input, userId: "u_fail" })
        expect(status).toBe(200)
        expect(body.status).toBe("failed")
        expectRecordShape(body)
        const error = body.error as Json
        expect(error).toMatchObject({ code, retryable })
        expect(error.retryAfter).toBe(retryAfter)
      })
    })

    describe("validation", () => {
      it.each([
        ["unknown tool", { tool: "demo.nothing", userId: "u" }],
        ["malformed tool name", { tool: "demo", userId: "u" }],
        ["input failing the tool schema", { tool: "demo.sleep", input: { ms: -1 }, userId: "u" }],
        ["unknown input field", { tool: "demo.sleep", input: { ms: 1, extra: 1 }, userId: "u" }],
        ["unknown body field", { tool: "demo.echo", userId: "u", nope: 1 }],
        ["wrong type", { tool: 5, userId: "u" }],
        ["input not an object", { tool: "demo.echo", input: [1], userId: "u" }],
        ["bad mode", { tool: "demo.echo", mode: "later", userId: "u" }],
        ["too long tool name", { tool: "x".repeat(300), userId: "u" }],
        ["bad userId", { tool: "demo.echo", userId: "not valid!" }],
        ["missing attachments", { tool: "demo.echo", userId: "u", attachments: ["file_0123456789abcdefghjkmnpqrstvwxyz"] }],
        ["a toolkit needing a connection", { tool: "slack.post_message", input: { channel: "C1", text: "hi" }, userId: "u" }],
        ["no user for an unpinned key", { tool: "demo.echo" }],
        // Outside audit: a key with a line break was taken (and is shown in logs as supplied).
        ["an idempotency key with a line break", { tool: "demo.echo", userId: "u", idempotencyKey: "a\nb" }],
        ["an idempotency key with a C1 control", { tool: "demo.echo", userId: "u", idempotencyKey: "a\u0085b" }],
        ["an idempotency key over 255 characters", { tool: "demo.echo", userId: "u", idempotencyKey: "k".repeat(256) }],
        // Limits audit: providers' retryAfter is told as a day at most; demo.fail's was unbounded.
        ["demo.fail retryAfter over a day", { tool: "demo.fail", input: { code: "rate_limited", retryAfter: 86_401 }, userId: "u" }],
        ["33 attachments", { tool: "demo.echo", userId: "u", attachments: Array.from({ length: 33 }, (_, i) => `file_${i}`) }]
      ])("%s is 422 invalid_input", async (_name, body) => {
        const { status, body: answer } = await execute(service, body)
        expect(status).toBe(422)
        expect(errorCode(answer)).toBe("invalid_input")
      })

      it("names the missing attachments", async () => {
        const id = "file_0123456789abcdefghjkmnpqrstvwxy0"
        const { body } = await execute(service, { tool: "demo.echo", userId: "u", attachments: [id] })
        expect(String((body.error as Json).message)).toContain(id)
      })

      it("malformed JSON is 400", async () => {
        const response = await service.fetch("/v1/execute", {
          method: "POST",
          body: "{\"tool\":",
          headers: { "content-type": "application/json" }
        })
        expect(response.status).toBe(400)
        expect(errorCode((await response.json()) as Json)).toBe("invalid_input")
      })

      it("a body over the ceiling is 413", async () => {
        const { status } = await execute(service, { tool: "demo.echo", userId: "u", input: { big: "x".repeat(2 * 1024 * 1024) } })
        expect(status).toBe(413)
      })

      it("missing and invalid keys are 401", async () => {
        const missing = await service.fetch("/v1/execute", { method: "POST", json: { tool: "demo.echo" }, key: null })
        expect(missing.status).toBe(401)
        const invalid = await service.fetch("/v1/execute", { method: "POST", json: { tool: "demo.echo" }, key: "not_a_real_key_000000" })
        expect(invalid.status).toBe(401)
        for (const path of ["/v1/executions", "/v1/executions/exe_x"]) {
          expect((await service.fetch(path, { key: null })).status).toBe(401)
        }
      })
    })

    describe("acting user", () => {
      it("the X-Service-User-Id header names the user", async () => {
        const { status, body } = await execute(service, { tool: "demo.echo" }, { headers: { "x-service-user-id": "u_header" } })
        expect(status).toBe(200)
        expect(body.userId).toBe("u_header")
      })

      it("a pinned key acts for its user, and naming another is 403", async () => {
        const own = await execute(service, { tool: "demo.echo" }, { key: PINNED_KEY })
        expect(own.body.userId).toBe("user_1")
        const other = await execute(service, { tool: "demo.echo", userId: "user_2" }, { key: PINNED_KEY })
        expect(other.status).toBe(403)
        expect(errorCode(other.body)).toBe("auth_insufficient_scope")
        const header = await execute(service, { tool: "demo.echo" }, { key: PINNED_KEY, headers: { "x-service-user-id": "user_2" } })
        expect(header.status).toBe(403)
      })
    })

    describe("get", () => {
      it("reads one record; other projects, other users of a pinned key and bad ids are 404", async () => {
        const { body } = await execute(service, { tool: "demo.echo", userId: "user_2" })
        const id = String(body.executionId)
        const read = await getJson(service, `/v1/executions/${id}`)
        expect(read.status).toBe(200)
        expect(read.body).toEqual(body)
        for (const [path, key] of [
          [`/v1/executions/${id}`, OTHER_KEY],
          [`/v1/executions/${id}`, PINNED_KEY],
          ["/v1/executions/exe_00000000000000000000000000000000", undefined],
          ["/v1/executions/not-an-id", undefined]
        ] as const) {
          const answer = await getJson(service, path, key)
          expect(answer.status).toBe(404)
          expect(errorCode(answer.body)).toBe("not_found")
        }
        const cancel = await post(service, `/v1/executions/${id}/cancel`, OTHER_KEY)
        expect(cancel.status).toBe(404)
      })

      it("an unpinned key naming a user in X-Service-User-Id reads and cancels only that user's executions, as for connections", async () => {
        const { body } = await execute(service, { tool: "demo.sleep", input: { ms: 60_000 }, userId: "u_owner", mode: "async" })
        const id = String(body.executionId)
        const asOther = { headers: { "x-service-user-id": "u_other" } }
        const read = await service.fetch(`/v1/executions/${id}`, asOther)
        expect(read.status).toBe(404)
        expect(errorCode((await read.json()) as Json)).toBe("not_found")
        const cancel = await service.fetch(`/v1/executions/${id}/cancel`, { method: "POST", ...asOther })
        expect(cancel.status).toBe(404)
        expect(errorCode((await cancel.json()) as Json)).toBe("not_found")
        const own = await service.fetch(`/v1/executions/${id}`, { headers: { "x-service-user-id": "u_owner" } })
        expect(own.status).toBe(200)
        const cancelled = await service.fetch(`/v1/executions/${id}/cancel`, { method: "POST", headers: { "x-service-user-id": "u_owner" } })
        expect(cancelled.status).toBe(200)
        expect(((await cancelled.json()) as Json).status).toBe("cancelled")
        const malformed = await service.fetch(`/v1/executions/${id}`, { headers: { "x-service-user-id": "not a user" } })
        expect(malformed.status).toBe(422)
      })

      it("a pinned key reads its own user's execution", async () => {
        const { body } = await execute(service, { tool: "demo.echo" }, { key: PINNED_KEY })
        const read = await getJson(service, `/v1/executions/${String(body.executionId)}`, PINNED_KEY)
        expect(read.status).toBe(200)
      })
    })

    describe("cancel", () => {
      it("a running execution: dispatch may have begun, and the adapter stops", async () => {
        const { status, body } = await execute(service, { tool: "demo.sleep", input: { ms: 60_000 }, userId: "u_cancel", mode: "async" })
        expect(status).toBe(202)
        const id = String(body.executionId)
        await waitFor(service, id, (r) => r.status === "running")
        const cancelled = await post(service, `/v1/executions/${id}/cancel`)
        expect(cancelled.status).toBe(200)
        expect(cancelled.body).toMatchObject({
          status: "cancelled",
          cancellation: { dispatchMayHaveBegun: true },
          error: { code: "execution_cancelled", retryable: false }
        })
        expectRecordShape(cancelled.body)
        // Cancelling again answers the same record.
        const again = await post(service, `/v1/executions/${id}/cancel`)
        expect(again.status).toBe(200)
        expect(again.body).toEqual(cancelled.body)
        expect((await getJson(service, `/v1/executions/${id}`)).body).toEqual(cancelled.body)
      })

      it("a terminal execution is 409", async () => {
        const { body } = await execute(service, { tool: "demo.echo", userId: "u_cancel" })
        const answer = await post(service, `/v1/executions/${String(body.executionId)}/cancel`)
        expect(answer.status).toBe(409)
        expect(errorCode(answer.body)).toBe("invalid_input")
        const failed = await execute(service, { tool: "demo.fail", input: { code: "provider_error" }, userId: "u_cancel" })
        expect((await post(service, `/v1/executions/${String(failed.body.executionId)}/cancel`)).status).toBe(409)
      })
    })

    describe("records", () => {
      it("never contain the input, the idempotency key or derived values", async () => {
        const secret = "needle-input-value-81723"
        const key = "needle-idempotency-key-99182"
        const { body } = await execute(service, { tool: "demo.sleep", input: { ms: 1 }, userId: "u_leak", idempotencyKey: key })
        const echo = await execute(service, { tool: "demo.fail", input: { code: "provider_error" }, userId: "u_leak" })
        const listed = await getJson(service, "/v1/executions?userId=u_leak")
        const all = JSON.stringify([body, echo.body, listed.body])
        expect(all).not.toContain(key)
        expect(all).not.toContain("sealed")
        expect(all).not.toContain("inputHash")
        expect(all).not.toContain("\"ms\"")
        const withSecret = await execute(service, { tool: "demo.sleep", input: { ms: 1 }, userId: "u_leak", idempotencyKey: secret })
        expect(JSON.stringify(withSecret.body)).not.toContain(secret)
      })

      it("the log keeps an input sealed only while the execution may wait for dispatch", async () => {
        const sync = await execute(service, { tool: "demo.echo", input: { kept: "no" }, userId: "u_sealed" })
        const async = await execute(service, { tool: "demo.echo", input: { kept: "yes" }, userId: "u_sealed", mode: "async" })
        const requestOf = async (executionId: string) => {
          const events = await service.runtime.runPromise(
            Effect.flatMap(EventStore, (store) => store.readStream(`execution-${executionId}`))
          )
          const request = events.find((e) => e.type === "ExecutionRequested")?.data as Record<string, unknown> | undefined
          expect(request).toBeDefined()
          // demo.echo's output repeats the input; the request itself never holds it in plain.
          expect(JSON.stringify(request)).not.toContain("kept")
          return request ?? {}
        }
        // Recorded together with its start: never resumed, so nothing to keep.
        expect(await requestOf(String(sync.body.executionId))).not.toHaveProperty("sealedInput")
        // Pending first: start-up recovery may have to dispatch it, so the input is kept sealed.
        expect(String((await requestOf(String(async.body.executionId))).sealedInput)).toMatch(/^v1\./)
      })

      it("a pure tool run sync commits its request, start and outcome together; others commit the outcome apart", async () => {
        const eventsOf = (executionId: unknown) =>
          service.runtime.runPromise(Effect.flatMap(EventStore, (store) => store.readStream(`execution-${String(executionId)}`)))
        const echo = await execute(service, { tool: "demo.echo", input: { n: 1 }, userId: "u_pure" })
        const fail = await execute(service, { tool: "demo.fail", input: { code: "rate_limited", retryAfter: 3 }, userId: "u_pure" })
        const sleep = await execute(service, { tool: "demo.sleep", input: { ms: 1 }, userId: "u_pure" })
        expect([echo.body, fail.body, sleep.body]).toMatchObject([{ status: "succeeded" }, { status: "failed" }, { status: "succeeded" }])
        const types = (events: ReadonlyArray<{ readonly type: string }>) => events.map((e) => e.type)
        const commits = (events: ReadonlyArray<{ readonly position: { readonly tx: bigint } }>) =>
          new Set(events.map((e) => e.position.tx)).size
        const echoEvents = await eventsOf(echo.body.executionId)
        const failEvents = await eventsOf(fail.body.executionId)
        const sleepEvents = await eventsOf(sleep.body.executionId)
        expect(types(echoEvents)).toEqual(["ExecutionRequested", "ExecutionStarted", "ExecutionSucceeded"])
        expect(types(failEvents)).toEqual(["ExecutionRequested", "ExecutionStarted", "ExecutionFailed"])
        expect(types(sleepEvents)).toEqual(["ExecutionRequested", "ExecutionStarted", "ExecutionSucceeded"])
        // The recorded run reads as any other: started before it completed, the record served.
        expect(Date.parse(String(echo.body.startedAt))).toBeLessThanOrEqual(Date.parse(String(echo.body.completedAt)))
        expect((await getJson(service, `/v1/executions/${String(echo.body.executionId)}`)).body).toEqual(echo.body)
        expect((await getJson(service, `/v1/executions/${String(fail.body.executionId)}`)).body).toEqual(fail.body)
        if (mode.name === "postgres") {
          // Events of one transaction share its position's tx.
          expect(commits(echoEvents)).toBe(1)
          expect(commits(failEvents)).toBe(1)
          // A sync request of a tool async by nature takes its permit as it is made (a full cap
          // is 429, interface.md, Limits), so its request and start commit together; its outcome
          // comes later, on its own.
          expect(commits(sleepEvents)).toBe(2)
        }
      })
    })
  })
}
