/**
 * The files view in headless Chromium against the real service: sizes read as people say them,
 * "1 byte", "N bytes", "1.5 KiB (1,536 bytes)", wherever a size is shown (the list, metadata).
 */
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createClient } from "../../client/index.ts"
import { ensureDashboard } from "../../dashboard/scripts/build.ts"
import { type InProcessService, KEY, startService } from "../support/Service.ts"
import { type Browser, launch } from "./Browser.ts"

await ensureDashboard()
const service: InProcessService = await startService({
  SERVICE_RATE_LIMIT_REQUEST_BURST: "10000",
  SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "60000"
})
const api = createClient({ baseUrl: service.baseUrl, apiKey: KEY })
let browser: Browser

beforeAll(async () => {
  browser = await launch()
})
afterAll(async () => {
  await browser?.close()
  await service.close()
})

const url = (path: string) => `${service.baseUrl}${path}`

const signIn = async (page: Page) => {
  await page.goto(url("/dashboard"))
  await page.getByLabel("API key").fill(KEY)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { level: 1, name: "Staged files" }).waitFor()
}

describe("the files view", () => {
  it("reads sizes as bytes under 1 KiB and in KiB with the exact count above, in the list and the metadata", async () => {
    const bytes = (size: number) => new Uint8Array(size).fill(97)
    await api.files.create({ name: "one.txt", content: bytes(1) })
    await api.files.create({ name: "ten.txt", content: bytes(10) })
    const kib = await api.files.create({ name: "kib.txt", content: bytes(1536) })
    await api.files.create({ name: "mib.txt", content: bytes(1024 * 1024) })
    const page = await browser.context.newPage()
    await signIn(page)
    const list = page.getByRole("region", { name: "Files in the project" })
    const sizeOf = (name: string) => list.getByRole("row").filter({ has: page.getByRole("cell", { name, exact: true }) }).getByRole("cell").nth(3)
    await list.getByRole("cell", { name: "kib.txt", exact: true }).waitFor()
    expect(await sizeOf("one.txt").textContent()).toBe("1 byte")
    expect(await sizeOf("ten.txt").textContent()).toBe("10 bytes")
    expect(await sizeOf("kib.txt").textContent()).toBe("1.5 KiB (1,536 bytes)")
    expect(await sizeOf("mib.txt").textContent()).toBe("1 MiB (1,048,576 bytes)")

    // A listed file's metadata, and one looked up by id.
    await list.getByRole("button", { name: "Metadata of one.txt" }).click()
    await list.getByRole("definition").getByText("1 byte", { exact: true }).waitFor()
    await page.getByLabel("File id").fill(kib.fileId)
    await page.getByRole("button", { name: "Show metadata" }).click()
    await page.getByRole("region", { name: "Look up a file" }).getByRole("definition").getByText("1.5 KiB (1,536 bytes)", { exact: true }).waitFor()
    expect(await page.locator("main").textContent()).not.toMatch(/\d B\b|1 bytes/)
    await page.close()
  })
})
