/**
 * Staged files through HTTP, on both stores: upload rules, listing with cursors, get-one, the
 * uniform 404, and the execution-bound byte reader.
 */
import { Effect, Exit } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type InProcessService, KEY, OTHER_KEY, PINNED_KEY } from "../support/Service.ts"
import { expectEnvelope, type Metadata, sleep, stores, upload, withFiles } from "./support/Files.ts"

const b64 = (text: string) => Buffer.from(text).toString("base64")
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const FILE_ID = /^file_[0-9a-hjkmnp-tv-z]{32}$/
const TTL_MS = 1000

for (const store of stores) {
  describe.skipIf(!store.available)(`staged files (${store.name})`, () => {
    let service: InProcessService
    let shortLived: InProcessService

    beforeAll(async () => {
      service = await store.start({ SERVICE_FILE_MAX_BYTES: "1024" })
      shortLived = await store.start({ SERVICE_FILE_TTL_MS: String(TTL_MS) })
    })
    afterAll(async () => {
      await service?.close()
      await shortLived?.close()
    })

    const post = (json: unknown, key?: string | null) =>
      service.fetch("/v1/files", { method: "POST", json, ...(key !== undefined ? { key } : {}) })

    describe("POST /v1/files", () => {
      it("stages a file and answers its metadata only", async () => {
        const before = Date.now()
        const response = await post({ name: "hello.txt", content: b64("hello"), mimeType: "text/plain; charset=utf-8" })
        expect(response.status).toBe(201)
        const text = await response.text()
        const body = JSON.parse(text) as Metadata
        expect(Object.keys(body).toSorted()).toEqual(["expiresAt", "fileId", "mimeType", "name", "size"])
        expect(body).toMatchObject({ name: "hello.txt", mimeType: "text/plain; charset=utf-8", size: 5 })
        expect(body.fileId).toMatch(FILE_ID)
        expect(body.expiresAt).toMatch(ISO_MS)
        const expires = Date.parse(body.expiresAt)
        expect(expires).toBeGreaterThanOrEqual(before + 3_600_000)
        expect(expires).toBeLessThanOrEqual(Date.now() + 3_600_000)
        expect(text).not.toContain(b64("hello"))
      })

      it("defaults the MIME type, accepts pinned keys, empty content and names of 255 characters", async () => {
        expect(await upload(service, { name: "x", content: b64("abc") }, PINNED_KEY)).toMatchObject({
          mimeType: "application/octet-stream",
          size: 3
        })
        expect((await upload(service, { name: "empty", content: "" })).size).toBe(0)
        expect((await upload(service, { name: "n".repeat(255), content: "AA==" })).name).toBe("n".repeat(255))
      })

      // Outside audit: a name's length was counted in UTF-16 units, so 128 emoji (256 units) were
      // refused as longer than 255 characters; docs/files.md says characters (JSON Schema's
      // maxLength counts code points too).
      it("counts a name's 255 characters in code points, not UTF-16 units", async () => {
        const emoji = "\u{1F389}"
        expect((await upload(service, { name: emoji.repeat(255), content: "AA==" })).name).toBe(emoji.repeat(255))
        const longer = await post({ name: emoji.repeat(256), content: "AA==" })
        expect(longer.status).toBe(422)
        expect(((await longer.json()) as { error: { message: string } }).error.message).toMatch(/255/)
        expect((await post({ name: "n".repeat(256), content: "AA==" })).status).toBe(422)
      })

      it("takes exactly the size cap, and refuses one byte more with 422", async () => {
        const at = await upload(service, { content: Buffer.alloc(1024, 1).toString("base64") })
        expect(at.size).toBe(1024)
        await expectEnvelope(await post({ name: "big", content: Buffer.alloc(1025, 1).toString("base64") }), 422, "invalid_input")
      })

      it.each([
        ["unpadded", "aGVsbG8"],
        ["URL-safe", "-_-_"],
        ["embedded space", "aGVs bG8h"],
        ["embedded newline", "aGVs\nbG8h"],
        ["trailing newline", "aGVsbG8=\n"],
        ["non-canonical bits", "aGVsbG9="],
        ["inner padding", "AA==AA=="],
        ["only padding", "===="],
        ["non-ASCII", "aGVsbG8é"],
        ["a character whose low byte is a base64 digit (U+0144 for D)", "QUJ\u0144"],
        ["CJK whose low byte is a base64 digit", "QUJ\u4144"]
      ])("refuses %s content with 422", async (_, content) => {
        await expectEnvelope(await post({ name: "x", content }), 422, "invalid_input")
      })

      it.each([
        ["missing name", { content: "" }],
        ["missing content", { name: "x" }],
        ["empty name", { name: "", content: "" }],
        ["name too long", { name: "n".repeat(256), content: "" }],
        ["huge name", { name: "n".repeat(15_000), content: "" }],
        ["control character in name", { name: "a\u0000b", content: "" }],
        // Outside audit: C1 controls (U+0085 is a line break to some log tools) were let through.
        ["C1 control character in name", { name: "a\u0085b", content: "" }],
        ["DEL in name", { name: "a\u007fb", content: "" }],
        ["name of wrong type", { name: 7, content: "" }],
        ["content of wrong type", { name: "x", content: 7 }],
        ["content null", { name: "x", content: null }],
        ["mimeType of wrong type", { name: "x", content: "", mimeType: ["text/plain"] }],
        ["mimeType malformed", { name: "x", content: "", mimeType: "text" }],
        ["mimeType huge", { name: "x", content: "", mimeType: `text/${"x".repeat(15_000)}` }],
        ["unknown field", { name: "x", content: "", path: "/etc/passwd" }],
        ["__proto__ field", JSON.parse(`{"name":"x","content":"","__proto__":{"a":1}}`) as unknown],
        ["array body", [{ name: "x", content: "" }]],
        ["string body", "x"],
        ["null body", null]
      ])("refuses %s with 422", async (_, body) => {
        await expectEnvelope(await post(body), 422, "invalid_input")
      })

      it("refuses a body over the ceiling (encoded cap plus 16 KiB) with 413", async () => {
        const ceiling = 4 * Math.ceil(1024 / 3) + 16 * 1024
        const response = await post({ name: "n".repeat(ceiling), content: "" })
        await expectEnvelope(response, 413, "invalid_input")
      })

      it("refuses malformed JSON with 400 and a non-JSON type with 415", async () => {
        const bad = await service.fetch("/v1/files", { method: "POST", body: "{\"name\":", headers: { "content-type": "application/json" } })
        await expectEnvelope(bad, 400, "invalid_input")
        const text = await service.fetch("/v1/files", { method: "POST", body: "{}", headers: { "content-type": "text/plain" } })
        await expectEnvelope(text, 415, "invalid_input")
      })

      it("takes a file at the default 25 MiB cap intact, and refuses one byte more", async () => {
        const fresh = await store.start()
        try {
          const bytes = Buffer.alloc(26_214_400)
          for (let i = 0; i < bytes.length; i += 4096) bytes[i] = (i / 4096) & 0xff
          const staged = await upload(fresh, { name: "cap.bin", content: bytes.toString("base64") })
          expect(staged.size).toBe(bytes.length)
          const read = await withFiles(fresh, (files) =>
            files.forExecution({ projectId: "proj_test", executionId: "exe_cap", attachments: [staged.fileId] }).read(staged.fileId))
          expect(Buffer.from(read.bytes).equals(bytes)).toBe(true)
          const over = await fresh.fetch("/v1/files", {
            method: "POST",
            json: { name: "over.bin", content: Buffer.alloc(26_214_401).toString("base64") }
          })
          await expectEnvelope(over, 422, "invalid_input")
        } finally {
          await fresh.close()
        }
      }, 60_000)

      it("refuses missing and invalid keys with 401 whatever the body", async () => {
        const malformed = await service.fetch("/v1/files", {
          method: "POST",
          key: "not_a_real_key_000000",
          body: "{\"name\":",
          headers: { "content-type": "application/json" }
        })
        await expectEnvelope(malformed, 401, "auth_expired")
        await expectEnvelope(await post({ name: "x", content: "" }, null), 401, "auth_missing")
        await expectEnvelope(await post({ name: "x", content: "" }, "not_a_real_key_000000"), 401, "auth_expired")
        await expectEnvelope(await post({ nonsense: true }, "not_a_real_key_000000"), 401, "auth_expired")
      })
    })

    describe("GET /v1/files", () => {
      it("pinned keys get 403, missing or bad keys 401", async () => {
        await expectEnvelope(await service.fetch("/v1/files", { key: PINNED_KEY }), 403, "auth_insufficient_scope")
        await expectEnvelope(await service.fetch("/v1/files", { key: null }), 401, "auth_missing")
        await expectEnvelope(await service.fetch("/v1/files", { key: "not_a_real_key_000000" }), 401, "auth_expired")
      })

      it("pages newest first with cursors, nextCursor only when more exist, per project", async () => {
        const own = await upload(service, { name: "own" }, OTHER_KEY)
        const list = (query: string) => service.fetch(`/v1/files${query}`, { key: OTHER_KEY })
        // No earlier test stages files for OTHER_KEY's project on this service.
        const staged = [own]
        // Ids order by creation millisecond; files of one millisecond are equally new.
        for (let i = 0; i < 4; i++) {
          await sleep(2)
          staged.push(await upload(service, { name: `f${i}` }, OTHER_KEY))
        }
        await upload(service, { name: "elsewhere" }, KEY)
        const newestFirst = staged.map((f) => f.fileId).toReversed()
        const pages: Array<Array<string>> = []
        let cursor: string | undefined
        do {
          const response = await list(`?limit=2${cursor !== undefined ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)
          expect(response.status).toBe(200)
          const body = (await response.json()) as { files: Array<Metadata>; nextCursor?: string }
          pages.push(body.files.map((f) => f.fileId))
          cursor = body.nextCursor
        } while (cursor !== undefined)
        expect(pages).toEqual([newestFirst.slice(0, 2), newestFirst.slice(2, 4), newestFirst.slice(4)])
        const whole = (await (await list("")).json()) as { files: Array<Metadata>; nextCursor?: string }
        expect(whole.files.map((f) => f.fileId)).toEqual(newestFirst)
        for (const file of whole.files) expect(Object.keys(file).toSorted()).toEqual(["expiresAt", "fileId", "mimeType", "name", "size"])
        expect(whole).not.toHaveProperty("nextCursor")
      })

      it("defaults to 100 per page", async () => {
        const fresh = await store.start()
        try {
          for (let i = 0; i < 101; i++) {
            if (i === 1 || i === 100) await sleep(2)
            await upload(fresh, { name: `f${i}` })
          }
          const first = (await (await fresh.fetch("/v1/files")).json()) as { files: Array<Metadata>; nextCursor?: string }
          expect(first.files).toHaveLength(100)
          expect(first.files[0]?.name).toBe("f100")
          const second = (await (await fresh.fetch(`/v1/files?cursor=${encodeURIComponent(first.nextCursor ?? "")}`)).json()) as {
            files: Array<Metadata>
            nextCursor?: string
          }
          expect(second.files.map((f) => f.name)).toEqual(["f0"])
          expect(second).not.toHaveProperty("nextCursor")
        } finally {
          await fresh.close()
        }
      })

      it.each(["limit=0", "limit=101", "limit=abc", "limit=1.5", "limit=", "limit=-1", "limit=1e1", "limit=+5", "limit=0x10", "limit=%205", "limit=100.0", "limit=1&limit=2", "foo=1", "cursor=abc", "cursor=", "cursor=x.y"])(
        "refuses ?%s with 422",
        async (query) => {
          await expectEnvelope(await service.fetch(`/v1/files?${query}`), 422, "invalid_input")
        }
      )

      it.each(["limit=0", "limit=101", "limit=abc", "limit=1.5", "limit=", "limit=1&limit=2"])("says what limit takes for ?%s", async (query) => {
        const body = await (await service.fetch(`/v1/files?${query}`)).json() as { error: { message: string } }
        expect(body.error.message).toContain("limit must be an integer from 1 to 100")
      })

      it("refuses forged and cross-project cursors with 422", async () => {
        for (let i = 0; i < 2; i++) await upload(service, { name: `p${i}` }, OTHER_KEY)
        const other = (await (await service.fetch("/v1/files?limit=1", { key: OTHER_KEY })).json()) as { nextCursor?: string }
        expect(other.nextCursor).toBeDefined()
        const cursor = other.nextCursor ?? ""
        await expectEnvelope(await service.fetch(`/v1/files?cursor=${encodeURIComponent(cursor)}`), 422, "invalid_input")
        const [body, mac] = cursor.split(".")
        const forgedBody = Buffer.from(JSON.stringify(["file_00000000000000000000000000000000"])).toString("base64url")
        for (const forged of [`${forgedBody}.${mac}`, `${body}.${(mac ?? "").replace(/^./, (c) => (c === "A" ? "B" : "A"))}`]) {
          await expectEnvelope(await service.fetch(`/v1/files?cursor=${encodeURIComponent(forged)}`, { key: OTHER_KEY }), 422, "invalid_input")
        }
        // The genuine cursor still works for its own project.
        expect((await service.fetch(`/v1/files?cursor=${encodeURIComponent(cursor)}`, { key: OTHER_KEY })).status).toBe(200)
      })

      it("omits expired files; an expired anchor works until its row is reclaimed, then 422", async () => {
        for (let i = 0; i < 3; i++) await upload(shortLived, { name: `e${i}` })
        const first = (await (await shortLived.fetch("/v1/files?limit=1")).json()) as { files: Array<Metadata>; nextCursor?: string }
        expect(first.files).toHaveLength(1)
        const cursor = encodeURIComponent(first.nextCursor ?? "")
        await sleep(TTL_MS + 50)
        const empty = (await (await shortLived.fetch("/v1/files")).json()) as { files: Array<Metadata> }
        expect(empty.files).toEqual([])
        const after = await shortLived.fetch(`/v1/files?cursor=${cursor}`)
        expect(after.status).toBe(200)
        expect(await after.json()).toEqual({ files: [] })
        // Reading the expired anchor by id deletes it; the cursor then points at nothing.
        await expectEnvelope(await shortLived.fetch(`/v1/files/${first.files[0]?.fileId}`), 404, "not_found")
        await expectEnvelope(await shortLived.fetch(`/v1/files?cursor=${cursor}`), 422, "invalid_input")
      })

      it("a cursor whose anchor the sweeper reclaimed is 422", async () => {
        for (let i = 0; i < 2; i++) await upload(shortLived, { name: `s${i}` })
        const first = (await (await shortLived.fetch("/v1/files?limit=1")).json()) as { nextCursor?: string }
        await sleep(TTL_MS + 50)
        const swept = await withFiles(shortLived, (files) => files.sweep(100))
        expect(swept.deleted).toBeGreaterThanOrEqual(2)
        await expectEnvelope(await shortLived.fetch(`/v1/files?cursor=${encodeURIComponent(first.nextCursor ?? "")}`), 422, "invalid_input")
      })
    })

    describe("GET /v1/files/:id", () => {
      it("answers the metadata to any key of the project", async () => {
        const staged = await upload(service, { name: "one", content: b64("abc") })
        for (const key of [KEY, PINNED_KEY]) {
          const response = await service.fetch(`/v1/files/${staged.fileId}`, { key })
          expect(response.status).toBe(200)
          expect(await response.json()).toEqual(staged)
        }
      })

      it("gives malformed, missing, expired and cross-project ids the identical 404", async () => {
        const foreign = await upload(shortLived, { name: "foreign" }, OTHER_KEY)
        const expiring = await upload(shortLived, { name: "expiring" })
        await sleep(TTL_MS + 50)
        const live = await upload(shortLived, { name: "live" }, OTHER_KEY)
        const ids = [
          "nope",
          "file_",
          "file_00000000000000000000000000000000",
          `${live.fileId.slice(0, -1)}${live.fileId.endsWith("0") ? "1" : "0"}`,
          expiring.fileId,
          expiring.fileId,
          foreign.fileId,
          live.fileId,
          encodeURIComponent("file_../../etc"),
          // Longer than the router takes for a parameter.
          `file_${"a".repeat(120)}`
        ]
        const bodies = new Set<string>()
        for (const id of ids) {
          const { body, text } = await expectEnvelope(await shortLived.fetch(`/v1/files/${id}`), 404, "not_found")
          bodies.add(text.replace(body.requestId, "REQ"))
        }
        expect([...bodies]).toHaveLength(1)
        // The live foreign file is still there for its own project.
        expect((await shortLived.fetch(`/v1/files/${live.fileId}`, { key: OTHER_KEY })).status).toBe(200)
      })

      it("refuses missing keys with 401", async () => {
        await expectEnvelope(await service.fetch("/v1/files/file_00000000000000000000000000000000", { key: null }), 401, "auth_missing")
      })
    })

    describe("execution-bound reads", () => {
      it("reads only attached, live files of the execution's project", async () => {
        const mine = await upload(shortLived, { name: "mine.txt", content: b64("secret bytes"), mimeType: "text/plain" })
        const notAttached = await upload(shortLived, { name: "other.txt", content: b64("other") })
        const foreign = await upload(shortLived, { name: "foreign", content: b64("x") }, OTHER_KEY)
        const attachments = [mine.fileId, foreign.fileId, "file_00000000000000000000000000000000", "garbage"]
        const read = (fileId: string) =>
          withFiles(shortLived, (files) =>
            Effect.exit(files.forExecution({ projectId: "proj_test", executionId: "exe_1", attachments }).read(fileId)))
        const ok = await read(mine.fileId)
        expect(Exit.isSuccess(ok)).toBe(true)
        if (Exit.isSuccess(ok)) {
          expect(Buffer.from(ok.value.bytes).toString()).toBe("secret bytes")
          expect(ok.value).toMatchObject({ fileId: mine.fileId, name: "mine.txt", mimeType: "text/plain" })
        }
        for (const id of [notAttached.fileId, foreign.fileId, "file_00000000000000000000000000000000", "garbage"]) {
          const exit = await read(id)
          expect(Exit.isFailure(exit) && JSON.stringify(exit.cause).includes("NotFound")).toBe(true)
        }
        const missing = await withFiles(shortLived, (files) =>
          files.existing("proj_test", [mine.fileId, notAttached.fileId, foreign.fileId, "garbage", mine.fileId]))
        expect(missing).toEqual([foreign.fileId, "garbage"])
        await sleep(TTL_MS + 50)
        expect(Exit.isFailure(await read(mine.fileId))).toBe(true)
        expect(await withFiles(shortLived, (files) => files.existing("proj_test", [mine.fileId]))).toEqual([mine.fileId])
      })
    })
  })
}
