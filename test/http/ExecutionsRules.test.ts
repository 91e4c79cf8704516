/**
 * Executions through HTTP on both stores: idempotency, listing with filters and cursors,
 * concurrency caps, the sync wait and the execute bucket.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type InProcessService, OTHER_KEY, PINNED_KEY, startService } from "../support/Service.ts"
import { errorCode, execute, getJson, type Json, modes, post, ROOMY, terminal, waitFor } from "./support/Executions.ts"

const ids = (page: Json) => (page.executions as ReadonlyArray<Json>).map((e) => String(e.executionId))

for (const mode of modes) {
  describe.skipIf(mode.skip)(`execution rules on ${mode.name}`, () => {
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

    describe("idempotency", () => {
      it("the same key and input answer the first execution, replayed from then on", async () => {
        const first = await execute(service, { tool: "demo.echo", input: { n: 1 }, userId: "u_idem", idempotencyKey: "k1" })
        expect(first.status).toBe(200)
        expect(first.body.replayed).toBeUndefined()
        // Key order does not matter; the header form is the same key.
        const again = await execute(service, { tool: "demo.echo", input: { n: 1 }, userId: "u_idem" }, {
          headers: { "idempotency-key": "k1" }
        })
        expect(again.status).toBe(200)
        expect(again.body.executionId).toBe(first.body.executionId)
        expect(again.body.replayed).toBe(true)
        const read = await getJson(service, `/v1/executions/${String(first.body.executionId)}`)
        expect(read.body.replayed).toBe(true)
        const third = await execute(service, { tool: "demo.echo", input: { n: 1 }, userId: "u_idem", idempotencyKey: "k1" })
        expect(third.body).toEqual(read.body)
      })

      it("an async replay answers like a fresh async request, 202 with Location, even once the execution has finished", async () => {
        const body = { tool: "demo.echo", input: { n: 2 }, userId: "u_idem_async", idempotencyKey: "k-async", mode: "async" }
        const first = await execute(service, body)
        expect(first.status).toBe(202)
        const id = String(first.body.executionId)
        await waitFor(service, id, (record) => record.status === "succeeded")
        const again = await execute(service, body)
        expect(again.status).toBe(202)
        expect(again.response.headers.get("location")).toBe(`/v1/executions/${id}`)
        expect(again.body).toMatchObject({ executionId: id, status: "succeeded", replayed: true })
        // A sync replay of it answers 200 with the terminal record.
        const sync = await execute(service, { ...body, mode: "sync" })
        expect(sync.status).toBe(200)
        expect(sync.response.headers.get("location")).toBeNull()
      })

      it("the same key with other input, or another tool, is 422", async () => {
        await execute(service, { tool: "demo.echo", input: { n: 1 }, userId: "u_idem2", idempotencyKey: "k2" })
        const other = await execute(service, { tool: "demo.echo", input: { n: 2 }, userId: "u_idem2", idempotencyKey: "k2" })
        expect(other.status).toBe(422)
        expect(errorCode(other.body)).toBe("invalid_input")
        const tool = await execute(service, { tool: "demo.sleep", input: { ms: 1 }, userId: "u_idem2", idempotencyKey: "k2" })
        expect(tool.status).toBe(422)
      })

      it("the same key with another set of attachments is 422; their order and repeats do not count", async () => {
        const stage = async (text: string) => {
          const response = await service.fetch("/v1/files", { method: "POST", json: { name: "a.txt", content: Buffer.from(text).toString("base64") } })
          expect(response.status).toBe(201)
          return String(((await response.json()) as { fileId: string }).fileId)
        }
        const [f1, f2] = [await stage("one"), await stage("two")]
        const first = await execute(service, { tool: "demo.echo", input: { n: 1 }, userId: "u_idem_att", idempotencyKey: "ka", attachments: [f1, f2] })
        expect(first.status).toBe(200)
        const same = await execute(service, { tool: "demo.echo", input: { n: 1 }, userId: "u_idem_att", idempotencyKey: "ka", attachments: [f2, f1, f2] })
        expect(same.status).toBe(200)
        expect((same.body as { executionId: string }).executionId).toBe((first.body as { executionId: string }).executionId)
        for (const attachments of [[f1], [], undefined]) {
          const other = await execute(service, { tool: "demo.echo", input: { n: 1 }, userId: "u_idem_att", idempotencyKey: "ka", ...(attachments === undefined ? {} : { attachments }) })
          expect(other.status).toBe(422)
          expect(errorCode(other.body)).toBe("invalid_input")
        }
        // Without attachments, an empty list and none are the same request.
        await execute(service, { tool: "demo.echo", userId: "u_idem_att", idempotencyKey: "kb" })
        expect((await execute(service, { tool: "demo.echo", userId: "u_idem_att", idempotencyKey: "kb", attachments: [] })).status).toBe(200)
      })

      it("an empty list of attachments attaches nothing: the record has no attachments, as without the field", async () => {
        const { status, body } = await execute(service, { tool: "demo.echo", input: { none: true }, userId: "u_no_att", attachments: [] })
        expect(status).toBe(200)
        expect(body).not.toHaveProperty("attachments")
        expect((await getJson(service, `/v1/executions/${String(body.executionId)}`)).body).not.toHaveProperty("attachments")
      })

      it("body and header together are 422", async () => {
        const both = await execute(service, { tool: "demo.echo", userId: "u_idem3", idempotencyKey: "a" }, { headers: { "idempotency-key": "a" } })
        expect(both.status).toBe(422)
      })

      it("keys are per user and per project", async () => {
        const a = await execute(service, { tool: "demo.echo", userId: "u_idem4", idempotencyKey: "shared" })
        const b = await execute(service, { tool: "demo.echo", userId: "u_idem5", idempotencyKey: "shared" })
        const c = await execute(service, { tool: "demo.echo", userId: "u_idem4", idempotencyKey: "shared" }, { key: OTHER_KEY })
        expect(new Set([a.body.executionId, b.body.executionId, c.body.executionId]).size).toBe(3)
        expect(b.body.replayed).toBeUndefined()
      })

      it("without a key nothing is deduplicated", async () => {
        const a = await execute(service, { tool: "demo.echo", input: { z: 1 }, userId: "u_idem6" })
        const b = await execute(service, { tool: "demo.echo", input: { z: 1 }, userId: "u_idem6" })
        expect(a.body.executionId).not.toBe(b.body.executionId)
        expect(b.body.replayed).toBeUndefined()
      })

      it("10 concurrent requests with one key create exactly one execution", async () => {
        const answers = await Promise.all(Array.from({ length: 10 }, () =>
          execute(service, { tool: "demo.echo", input: { c: 1 }, userId: "u_idem7", idempotencyKey: "burst", mode: "async" })))
        const created = new Set(answers.map((a) => a.body.executionId))
        expect(answers.every((a) => a.status === 202 || a.status === 200)).toBe(true)
        expect(created.size).toBe(1)
        const page = await getJson(service, "/v1/executions?userId=u_idem7")
        expect(ids(page.body)).toEqual([...created])
        const done = await waitFor(service, String([...created][0]), terminal)
        expect(done).toMatchObject({ status: "succeeded", replayed: true })
      })
    })

    describe("list", () => {
      let made: Array<Json> = []
      // Executions of OTHER_KEY's project made by earlier tests: older than these.
      let before: Array<string> = []

      beforeAll(async () => {
        made = []
        before = ids((await getJson(service, "/v1/executions", OTHER_KEY)).body)
        for (const [tool, input, userId] of [
          ["demo.echo", { i: 0 }, "u_list_a"],
          ["demo.fail", { code: "provider_error" }, "u_list_a"],
          ["demo.echo", { i: 2 }, "u_list_b"],
          ["demo.echo", { i: 3 }, "u_list_a"],
          ["demo.fail", { code: "timeout" }, "u_list_b"]
        ] as const) {
          made.push((await execute(service, { tool, input, userId }, { key: OTHER_KEY })).body)
        }
      })

      const listOther = (query: string) => getJson(service, `/v1/executions${query}`, OTHER_KEY)

      it("an unpinned key without userId lists the project, newest first", async () => {
        const { status, body } = await listOther("")
        expect(status).toBe(200)
        expect(ids(body)).toEqual([...made.map((m) => String(m.executionId)).toReversed(), ...before])
        expect(body.nextCursor).toBeUndefined()
      })

      it("filters by user, status and tool (canonical or wire)", async () => {
        expect(ids((await listOther("?userId=u_list_a")).body)).toEqual([made[3], made[1], made[0]].map((m) => String(m?.executionId)))
        expect(ids((await listOther("?status=failed")).body)).toEqual([made[4], made[1]].map((m) => String(m?.executionId)))
        expect(ids((await listOther("?tool=demo.fail&userId=u_list_b")).body)).toEqual([String(made[4]?.executionId)])
        const echoes = ids((await listOther("?tool=demo__echo&status=succeeded")).body)
        expect(echoes).toEqual([...[made[3], made[2], made[0]].map((m) => String(m?.executionId)), ...before])
        expect(ids((await listOther("?status=running")).body)).toEqual([])
        const header = await getJson(service, "/v1/executions", undefined)
        expect(header.status).toBe(200)
      })

      it("pages with cursors", async () => {
        const seen: Array<string> = []
        let query = "?limit=2"
        for (let page = 0; page < 5; page++) {
          const { status, body } = await listOther(query)
          expect(status).toBe(200)
          seen.push(...ids(body))
          if (body.nextCursor === undefined) break
          expect(ids(body)).toHaveLength(2)
          query = `?limit=2&cursor=${encodeURIComponent(String(body.nextCursor))}`
        }
        expect(seen).toEqual([...made.map((m) => String(m.executionId)).toReversed(), ...before])
      })

      it("a pinned key lists only its user's, and naming another is 403", async () => {
        const own = await execute(service, { tool: "demo.echo" }, { key: PINNED_KEY })
        await execute(service, { tool: "demo.echo", userId: "user_9" })
        const { status, body } = await getJson(service, "/v1/executions", PINNED_KEY)
        expect(status).toBe(200)
        const users = new Set((body.executions as ReadonlyArray<Json>).map((e) => e.userId))
        expect([...users]).toEqual(["user_1"])
        expect(ids(body)).toContain(String(own.body.executionId))
        const other = await getJson(service, "/v1/executions?userId=user_9", PINNED_KEY)
        expect(other.status).toBe(403)
      })

      it.each([
        ["?limit=0"],
        ["?limit=101"],
        ["?limit=abc"],
        ["?status=done"],
        ["?tool=demo"],
        ["?tool=demo.echo%0A"],
        ["?tool=demo.ec%20ho"],
        ["?tool=demo.echo."],
        ["?unknown=1"],
        ["?cursor=garbage"],
        ["?cursor=eyJ4IjoxfQ.AAAAAAAAAAAAAAAAAAAAAA"]
      ])("%s is 422", async (query) => {
        const { status, body } = await listOther(query)
        expect(status).toBe(422)
        expect(errorCode(body)).toBe("invalid_input")
      })

      it("a cursor of another project is 422", async () => {
        const { body } = await listOther("?limit=1")
        const foreign = await getJson(service, `/v1/executions?cursor=${encodeURIComponent(String(body.nextCursor))}`)
        expect(foreign.status).toBe(422)
      })

      // As trigger-event and subscription cursors: a cursor pages the list it came from.
      it("a cursor of another filter or user is 422; the same list pages on", async () => {
        for (let i = 0; i < 3; i++) {
          await execute(service, { tool: "demo.echo", userId: "user_1" })
          await execute(service, { tool: "demo.fail", input: { code: "provider_error" }, userId: "user_9" })
        }
        const first = await getJson(service, "/v1/executions?status=failed&limit=1")
        const cursor = encodeURIComponent(String(first.body.nextCursor))
        expect((await getJson(service, `/v1/executions?status=failed&limit=1&cursor=${cursor}`)).status).toBe(200)
        for (const query of [`?status=succeeded&cursor=${cursor}`, `?cursor=${cursor}`, `?status=failed&tool=demo.fail&cursor=${cursor}`, `?status=failed&userId=user_9&cursor=${cursor}`]) {
          const refused = await getJson(service, `/v1/executions${query}`)
          expect(refused.status).toBe(422)
          expect(errorCode(refused.body)).toBe("invalid_input")
        }
        // The tool filter by its canonical or its wire name is one filter, and one list.
        const byName = await getJson(service, "/v1/executions?tool=demo.fail&limit=1")
        const byNameCursor = encodeURIComponent(String(byName.body.nextCursor))
        const byWire = await getJson(service, `/v1/executions?tool=demo__fail&limit=1&cursor=${byNameCursor}`)
        expect(byWire.status).toBe(200)
        expect(ids(byWire.body)).toEqual(ids((await getJson(service, `/v1/executions?tool=demo.fail&limit=1&cursor=${byNameCursor}`)).body))
        const user9 = await getJson(service, "/v1/executions?userId=user_9&limit=1")
        const pinned = await getJson(service, `/v1/executions?cursor=${encodeURIComponent(String(user9.body.nextCursor))}`, PINNED_KEY)
        expect(pinned.status).toBe(422)
      })
    })

    describe("concurrency cap (demo: 4 per project)", () => {
      it("a full cap rejects sync, queues async FIFO, and frees permits on every outcome", async () => {
        const key = PINNED_KEY
        const running: Array<string> = []
        for (let i = 0; i < 4; i++) {
          const { status, body } = await execute(service, { tool: "demo.sleep", input: { ms: 60_000 }, mode: "async" }, { key })
          expect(status).toBe(202)
          running.push(String(body.executionId))
        }
        for (const id of running) await waitFor(service, id, (r) => r.status === "running")
        const sync = await execute(service, { tool: "demo.echo" }, { key })
        expect(sync.status).toBe(429)
        expect(sync.body.error).toMatchObject({ code: "rate_limited", retryable: true, retryAfter: 1 })
        expect(sync.response.headers.get("retry-after")).toBe("1")
        // So is a sync request of a tool that runs async by nature: it is a synchronous request
        // (interface.md, Limits: "When that cap is full, a synchronous request is rejected before
        // allocation with 429 and a one-second retry hint"), and nothing is recorded for it.
        const before = (await getJson(service, "/v1/executions?tool=demo.sleep&limit=100", key)).body
        const syncSleep = await execute(service, { tool: "demo.sleep", input: { ms: 1 } }, { key })
        expect(syncSleep.status).toBe(429)
        expect(syncSleep.body.error).toMatchObject({ code: "rate_limited", retryable: true, retryAfter: 1 })
        expect(ids((await getJson(service, "/v1/executions?tool=demo.sleep&limit=100", key)).body)).toEqual(ids(before))
        // An async request of it is accepted and stays pending.
        const queued = await execute(service, { tool: "demo.sleep", input: { ms: 1 }, mode: "async" }, { key })
        const queued2 = await execute(service, { tool: "demo.sleep", input: { ms: 60_000 }, mode: "async" }, { key })
        await new Promise((resolve) => setTimeout(resolve, 150))
        expect((await getJson(service, `/v1/executions/${String(queued.body.executionId)}`)).body.status).toBe("pending")
        // Cancelling a pending one: dispatch had not begun.
        const cancelledPending = await post(service, `/v1/executions/${String(queued2.body.executionId)}/cancel`)
        expect(cancelledPending.body).toMatchObject({ status: "cancelled", cancellation: { dispatchMayHaveBegun: false } })
        expect(cancelledPending.body.startedAt).toBeUndefined()
        // Cancelling a running one frees its permit for the first in line.
        await post(service, `/v1/executions/${running[0]}/cancel`)
        const ran = await waitFor(service, String(queued.body.executionId), terminal)
        expect(ran.status).toBe("succeeded")
        for (const id of running.slice(1)) await post(service, `/v1/executions/${id}/cancel`)
        // Successes, failures and timeouts all give their permits back.
        for (let i = 0; i < 6; i++) {
          expect((await execute(service, { tool: "demo.echo" }, { key })).status).toBe(200)
          expect((await execute(service, { tool: "demo.fail", input: { code: "timeout" } }, { key })).status).toBe(200)
        }
        // Concurrent sync requests: at most 4 hold a permit at once, the others are 429.
        const burst = await Promise.all(Array.from({ length: 8 }, () => execute(service, { tool: "demo.echo" }, { key })))
        expect(burst.every((b) => b.status === 200 || b.status === 429)).toBe(true)
        expect((await execute(service, { tool: "demo.echo" }, { key })).status).toBe(200)
        // With room under the cap, a sync request of demo.sleep takes a permit and waits for its end.
        const slept = await execute(service, { tool: "demo.sleep", input: { ms: 5 } }, { key })
        expect({ status: slept.status, record: slept.body.status, output: slept.body.output }).toEqual({ status: 200, record: "succeeded", output: { sleptMs: 5 } })
      })
    })

    describe("sync wait and the execute bucket", () => {
      let small: InProcessService
      let dropSmall: () => Promise<void>

      beforeAll(async () => {
        const store = await mode.env()
        dropSmall = store.drop
        small = await startService({
          ...store.env,
          SERVICE_EXECUTE_SYNC_WAIT_MS: "100",
          SERVICE_RATE_LIMIT_EXECUTE_BURST: "3",
          SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "1"
        })
      })
      afterAll(async () => {
        await small?.close()
        await dropSmall?.()
      })

      it("a sync request not terminal within the wait answers 202 with the current record", async () => {
        const { status, body, response } = await execute(small, { tool: "demo.sleep", input: { ms: 400 }, userId: "u_wait" })
        expect(status).toBe(202)
        expect(["pending", "running"]).toContain(body.status)
        expect(response.headers.get("location")).toBe(`/v1/executions/${String(body.executionId)}`)
        expect((await waitFor(small, String(body.executionId), terminal)).status).toBe("succeeded")
      })

      it("the execute bucket answers 429 with Retry-After once its burst is spent", async () => {
        await execute(small, { tool: "demo.echo", userId: "u_bucket" })
        await execute(small, { tool: "demo.echo", userId: "u_bucket" })
        const over = await execute(small, { tool: "demo.echo", userId: "u_bucket" })
        expect(over.status).toBe(429)
        expect(errorCode(over.body)).toBe("rate_limited")
        expect(Number(over.response.headers.get("retry-after"))).toBeGreaterThan(0)
        // The standard bucket is independent.
        expect((await getJson(small, "/v1/executions?userId=u_bucket")).status).toBe(200)
      })
    })
  })
}
