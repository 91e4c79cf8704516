/**
 * The files view in headless Chromium against the real service: several files dropped or picked
 * at once are all uploaded, one request after another, each listed with its result (the staged
 * file's id, or the service's code and message); and sizes read as people say them, "1 byte",
 * "N bytes", "1.5 KiB (1,536 bytes)", wherever a size is shown (uploads, the list, metadata, a
 * refusal's message), an upload reading "name, size: result" with no parentheses nested; a file
 * refused as too large (413) is said with the service's own message, which names its limit, not a
 * size the dashboard assumes; a look-up's error goes once the file id is changed or cleared.
 */
import type { Page } from "playwright-core"
import { afterAll, describe, expect, it } from "vitest"
import { KEY, startService } from "../support/Service.ts"
import { seriousViolations, watch } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, service } = h

/** The service again, with a file cap of 1 KiB rather than 25 MiB: its request body ceiling is 4 * ceil(1024 / 3) + 16 KiB. */
const capped = await startService({ SERVICE_FILE_MAX_BYTES: "1024" })
afterAll(() => capped.close())

const signIn = async (page: Page, base = service.baseUrl) => {
  await page.goto(`${base}/dashboard`)
  await page.getByLabel("API key").fill(KEY)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { level: 1, name: "Staged files" }).waitFor()
}

/**
 * Holds each upload a moment and records how many were in flight at once, and the names in the
 * order they were sent; `refuse` names files answered with the service's 413.
 */
const observeUploads = async (page: Page, refuse: ReadonlyArray<string> = []) => {
  const seen = { names: [] as Array<string>, inFlight: 0, mostInFlight: 0 }
  await page.route("**/v1/files", async (route) => {
    if (route.request().method() !== "POST") return route.continue()
    const name = String((route.request().postDataJSON() as { name: string }).name)
    seen.names.push(name)
    seen.inFlight++
    seen.mostInFlight = Math.max(seen.mostInFlight, seen.inFlight)
    await new Promise((resolve) => setTimeout(resolve, 150))
    try {
      if (refuse.includes(name)) {
        return await route.fulfill({
          status: 413,
          contentType: "application/json",
          body: JSON.stringify({ error: { code: "invalid_input", message: "The request body exceeds 34968920 bytes.", retryable: false }, requestId: "req_test" })
        })
      }
      return await route.fulfill({ response: await route.fetch() })
    } finally {
      seen.inFlight--
    }
  })
  return seen
}

const drop = (page: Page, files: ReadonlyArray<{ readonly name: string; readonly size: number }>) =>
  page.evaluate(`(() => {
    const transfer = new DataTransfer()
    for (const { name, size } of ${JSON.stringify(files)}) transfer.items.add(new File([new Uint8Array(size).fill(97)], name, { type: "text/plain" }))
    document.querySelector(".drop-zone").dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }))
  })()`)

describe("the files view", () => {
  it("uploads every dropped file, one after another, each shown with its file id or its error", async () => {
    const page = await h.browser.context.newPage()
    const watched = watch(page)
    await signIn(page)
    const seen = await observeUploads(page, ["too-big.txt"])
    await drop(page, [{ name: "first.txt", size: 1 }, { name: "too-big.txt", size: 2048 }, { name: "third.txt", size: 1536 }])
    const uploads = page.getByRole("region", { name: "Uploads" })
    await page.getByRole("status").filter({ hasText: "2 of 3 files uploaded; 1 failed." }).waitFor({ timeout: 10_000 })
    expect(seen.names).toEqual(["first.txt", "too-big.txt", "third.txt"])
    expect(seen.mostInFlight).toBe(1)

    const item = (name: string) => uploads.getByRole("listitem").filter({ hasText: name })
    expect(await uploads.getByRole("listitem").count()).toBe(3)
    expect(await item("first.txt").locator("code.file-id").textContent()).toMatch(/^file_/)
    expect(await item("third.txt").locator("code.file-id").textContent()).toMatch(/^file_/)
    const refused = item("too-big.txt").getByRole("alert")
    expect(await refused.locator(".error-code").textContent()).toBe("invalid_input")
    expect(await refused.locator(".error-message").textContent()).toBe(
      "The service refused too-big.txt, 2 KiB (2,048 bytes), as too large (a file is sent as base64, a third larger than the file). " +
        "It said: The request body exceeds 34968920 bytes."
    )
    expect(await item("too-big.txt").locator("code.file-id").count()).toBe(0)
    expect(await uploads.getByRole("listitem").allTextContents()).toEqual([
      expect.stringMatching(/^first\.txt, 1 byte: uploaded as file_/),
      expect.stringMatching(/^too-big\.txt, 2 KiB \(2,048 bytes\): Error invalid_input/),
      expect.stringMatching(/^third\.txt, 1\.5 KiB \(1,536 bytes\): uploaded as file_/)
    ])

    // The list holds the two that were staged, and only those.
    const list = page.getByRole("region", { name: "Files in the project" })
    await list.getByRole("cell", { name: "third.txt", exact: true }).waitFor()
    await list.getByRole("cell", { name: "first.txt", exact: true }).waitFor()
    expect(await list.getByRole("cell", { name: "too-big.txt", exact: true }).count()).toBe(0)
    expect(await seriousViolations(page), "axe on the uploads").toEqual([])
    expect(watched.errors).toEqual([])
    await page.close()
  })

  it("takes several files from the picker too", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page)
    const seen = await observeUploads(page)
    await page.getByLabel("Files to upload").setInputFiles([
      { name: "picked-a.txt", mimeType: "text/plain", buffer: Buffer.from("a") },
      { name: "picked-b.txt", mimeType: "text/plain", buffer: Buffer.from("bb") }
    ])
    await page.getByRole("status").filter({ hasText: "2 files uploaded." }).waitFor({ timeout: 10_000 })
    expect(seen.names).toEqual(["picked-a.txt", "picked-b.txt"])
    expect(seen.mostInFlight).toBe(1)
    expect(await page.getByRole("region", { name: "Uploads" }).locator("code.file-id").count()).toBe(2)
    await page.close()
  })

  it("says a file refused as too large (413) in the service's own words, whatever its cap, and assumes none", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page, capped.baseUrl)
    await page.getByLabel("Files to upload").setInputFiles([
      { name: "small.bin", mimeType: "application/octet-stream", buffer: Buffer.alloc(1_000) },
      { name: "big.bin", mimeType: "application/octet-stream", buffer: Buffer.alloc(20_000) }
    ])
    await page.getByRole("status").filter({ hasText: "1 of 2 files uploaded; 1 failed." }).waitFor({ timeout: 10_000 })
    const uploads = page.getByRole("region", { name: "Uploads" })
    const refused = uploads.getByRole("listitem").filter({ hasText: "big.bin" }).getByRole("alert")
    expect(await refused.textContent()).toContain("HTTP 413")
    expect(await refused.locator(".error-message").textContent()).toBe(
      "The service refused big.bin, 19.5 KiB (20,000 bytes), as too large (a file is sent as base64, a third larger than the file). " +
        "It said: The request body exceeds 17752 bytes."
    )
    expect(await uploads.textContent()).not.toMatch(/MiB|SERVICE_FILE_MAX_BYTES/)
    expect(await uploads.getByRole("listitem").allTextContents()).toEqual([
      expect.stringMatching(/^small\.bin, 1,000 bytes: uploaded as file_/),
      expect.stringMatching(/^big\.bin, 19\.5 KiB \(20,000 bytes\): Error invalid_input/)
    ])
    await page.close()
  })

  it("reads sizes as bytes under 1 KiB and in KiB with the exact count above, in the list and the metadata", async () => {
    const bytes = (size: number) => new Uint8Array(size).fill(97)
    await api.files.create({ name: "one.txt", content: bytes(1) })
    await api.files.create({ name: "ten.txt", content: bytes(10) })
    const kib = await api.files.create({ name: "kib.txt", content: bytes(1536) })
    await api.files.create({ name: "mib.txt", content: bytes(1024 * 1024) })
    const page = await h.browser.context.newPage()
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

describe("times", () => {
  /** The files view in a page whose browser runs in `timezoneId`, once `name` is listed. */
  const filesIn = async (timezoneId: string, name: string) => {
    const page = await h.browser.context.newPage()
    const cdp = await page.context().newCDPSession(page)
    await cdp.send("Emulation.setTimezoneOverride", { timezoneId })
    await signIn(page)
    await page.getByRole("region", { name: "Files in the project" }).getByRole("cell", { name, exact: true }).waitFor()
    return page
  }

  it("are shown with their zone: UTC, or the browser's offset from it", async () => {
    const file = await api.files.create({ name: "zoned.txt", content: new Uint8Array(3) })
    for (const [timezoneId, zone] of [["UTC", /\bUTC$/], ["Asia/Kolkata", /\bUTC\+05:30$/], ["America/St_Johns", /\bUTC-0[23]:30$/]] as const) {
      const page = await filesIn(timezoneId, "zoned.txt")
      const list = page.getByRole("region", { name: "Files in the project" })
      await list.getByRole("button", { name: "Metadata of zoned.txt" }).click()
      await list.getByRole("definition").locator(`time[datetime="${file.expiresAt}"]`).waitFor()
      const shown = await page.locator("main time").allTextContents()
      expect(shown.length, timezoneId).toBeGreaterThanOrEqual(2)
      for (const text of shown) expect(text.trim(), timezoneId).toMatch(zone)
      await page.close()
    }
  })
})

describe("looking up a file", () => {
  it("takes a shown error (and its request id) away once the file id changes, and when it is cleared and the press refused", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page)
    const lookup = page.getByRole("region", { name: "Look up a file" })
    const field = page.getByLabel("File id")
    const show = page.getByRole("button", { name: "Show metadata" })
    await field.fill("file_doesnotexist")
    await show.click()
    await expect.poll(() => lookup.getByRole("alert").locator(".error-code").textContent(), { timeout: 10_000 }).toBe("not_found")
    expect(await lookup.getByRole("alert").textContent()).toContain("Request id")
    // Cleared, then pressed: the browser refuses the empty field, and the old error is gone.
    await field.fill("")
    await expect.poll(() => lookup.getByRole("alert").count()).toBe(0)
    await show.click()
    expect(await lookup.getByRole("alert").count()).toBe(0)
    expect(await lookup.textContent()).not.toContain("Request id")
    // Another id typed after an error: the error goes as the id changes.
    await field.fill("file_doesnotexist")
    await show.click()
    await lookup.getByRole("alert").waitFor()
    await field.press("End")
    await field.press("Backspace")
    await expect.poll(() => lookup.getByRole("alert").count()).toBe(0)
    await page.close()
  })
})
