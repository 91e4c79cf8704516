/**
 * One project's staged files cannot fill the store for everyone (outside audit: 120 uploads of
 * 25 MiB in memory mode took the process to 3.6 GiB, all answered 201, with room for thousands
 * more before the first expired). SERVICE_FILE_PROJECT_MAX_BYTES bounds the bytes of a project's
 * live files: past it an upload is 429 `rate_limited` with the seconds until the first of them
 * expires; another project is not affected, and expired files no longer count.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { OTHER_KEY } from "../support/Service.ts"
import type { InProcessService } from "../support/Service.ts"
import { stores, upload } from "./support/Files.ts"

const QUOTA = 10_000
const TTL_MS = 4_000
const bytes = (n: number) => Buffer.alloc(n, 7).toString("base64")

for (const store of stores) {
  describe.skipIf(!store.available)(`a project's staged bytes (${store.name})`, () => {
    let service: InProcessService

    beforeAll(async () => {
      service = await store.start({ SERVICE_FILE_PROJECT_MAX_BYTES: String(QUOTA), SERVICE_FILE_TTL_MS: String(TTL_MS) })
    })
    afterAll(async () => service?.close())

    it("takes uploads up to the limit, refuses the next with 429 until files expire; other projects are not affected", async () => {
      await upload(service, { name: "a.bin", content: bytes(6_000) })
      await upload(service, { name: "b.bin", content: bytes(4_000) })
      const refused = await service.fetch("/v1/files", { method: "POST", json: { name: "c.bin", content: bytes(1) } })
      expect(refused.status).toBe(429)
      const body = (await refused.json()) as { error: { code: string; message: string; retryable: boolean; retryAfter: number } }
      expect(body.error.code).toBe("rate_limited")
      expect(body.error.retryable).toBe(true)
      expect(body.error.message).toContain("SERVICE_FILE_PROJECT_MAX_BYTES")
      expect(body.error.retryAfter).toBeGreaterThanOrEqual(1)
      expect(body.error.retryAfter).toBeLessThanOrEqual(TTL_MS / 1000)
      expect(refused.headers.get("retry-after")).toBe(String(body.error.retryAfter))
      // An empty file still fits.
      await upload(service, { name: "empty.bin", content: "" })
      // Another project has its whole share.
      await upload(service, { name: "other.bin", content: bytes(9_000) }, OTHER_KEY)
      // Once the first files expire, their bytes count no more.
      await new Promise((resolve) => setTimeout(resolve, TTL_MS + 200))
      await upload(service, { name: "later.bin", content: bytes(9_500) })
    })

    it("holds when uploads arrive together: their bytes are reserved before the project's total is read", async () => {
      // The first test's files expire first, so the project starts empty.
      await new Promise((resolve) => setTimeout(resolve, TTL_MS + 200))
      const answers = await Promise.all(Array.from({ length: 48 }, (_, i) =>
        service.fetch("/v1/files", { method: "POST", json: { name: `together-${i}.bin`, content: bytes(1_000) } })))
      const statuses = answers.map((answer) => answer.status)
      expect(statuses.filter((status) => status !== 201 && status !== 429)).toEqual([])
      const accepted = statuses.filter((status) => status === 201).length
      // 10,000 bytes of room: at most ten of the 48 1,000-byte files.
      expect(accepted).toBeLessThanOrEqual(QUOTA / 1_000)
      expect(accepted).toBeGreaterThan(0)
    })
  })
}
