/**
 * Text the dashboard did not write (a file's name, a tool's input echoed in its output, any text
 * from the API) may hold bidirectional control characters. A right-to-left override (U+202E) in
 * a file name "report\u202Efdp.exe" would show it as "reportexe.pdf", and, inside a sentence,
 * mirror the rest of the sentence ("name, size: uploaded as file_…, expires …"). In headless
 * Chromium against the real service: such a value is isolated from the text around it (`<bdi>`,
 * CSS `unicode-bidi: isolate`), and its control characters are shown as escapes ("\u202E") rather
 * than applied, so the glyphs are laid out in the order of the text.
 */
import type { Locator, Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { screenshot, seriousViolations, signIn as signInAt } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url } = h

const RLO = "\u202E"
const NAME = `report${RLO}fdp.exe`
/** What the page shows for NAME: the override as an escape, in the text's own order. */
const SHOWN = "report\\u202Efdp.exe"

/**
 * Where the first character of each of `parts` (found in this order in the element's text) is
 * drawn: [line top, left]. Text laid out in its own order has them in reading order, line by line.
 */
const glyphPositions = (element: Locator, parts: ReadonlyArray<string>) =>
  element.evaluate((root, wanted) => {
    // In the browser, through the page's own document (the tests' types have no DOM).
    type TextNode = { readonly data: string }
    const page = root.ownerDocument
    const nodes: Array<TextNode> = []
    const walker = page.createTreeWalker(root, 4 /* NodeFilter.SHOW_TEXT */)
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) nodes.push(node as TextNode)
    const text = nodes.map((node) => node.data).join("")
    let from = 0
    return wanted.map((part) => {
      const at = text.indexOf(part, from)
      if (at < 0) throw new Error(`"${part}" is not in "${text}"`)
      from = at + part.length
      let offset = at
      const node = nodes.find((candidate) => {
        if (offset < candidate.data.length) return true
        offset -= candidate.data.length
        return false
      }) as TextNode
      const range = page.createRange()
      range.setStart(node, offset)
      range.setEnd(node, offset + 1)
      const rect = range.getBoundingClientRect()
      return [Math.round(rect.top), rect.left] as const
    })
  }, parts)

/**
 * In reading order: each part on a later line, or on the same line further right (glyphs of
 * another font on the same line, an id's monospace, may sit a pixel or two higher or lower).
 */
const expectReadingOrder = (positions: ReadonlyArray<readonly [number, number]>, what: string) => {
  for (let i = 1; i < positions.length; i++) {
    const [top, left] = positions[i] as readonly [number, number]
    const [previousTop, previousLeft] = positions[i - 1] as readonly [number, number]
    const sameLine = Math.abs(top - previousTop) < 8
    expect(sameLine ? left > previousLeft : top > previousTop, `${what}: ${JSON.stringify(positions)}`).toBe(true)
  }
}

const isolated = (element: Locator) => element.evaluate((e) => e.ownerDocument.defaultView?.getComputedStyle(e).unicodeBidi)

const signIn = async (page: Page, path: string) => {
  await page.setViewportSize({ width: 1280, height: 800 })
  await signInAt(page, url(path))
}

describe("bidirectional control characters in what the dashboard shows", () => {
  it("leave an uploaded file's result line, its row and its metadata in reading order, the override shown", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/files")
    await page.getByLabel("Files to upload").setInputFiles([{ name: NAME, mimeType: "application/pdf", buffer: Buffer.from("%PDF-1") }])
    await page.getByRole("status").filter({ hasText: "1 file uploaded." }).waitFor({ timeout: 10_000 })

    // "name, size: uploaded as file_…, expires …": the sentence is not mirrored around the name.
    const line = page.getByRole("region", { name: "Uploads" }).getByRole("listitem")
    const fileId = (await line.locator("code.file-id").textContent()) ?? ""
    expect(fileId).toMatch(/^file_/)
    expect(await line.textContent()).not.toContain(RLO)
    expect(await line.textContent()).toMatch(/^report\\u202Efdp\.exe, 6 bytes: uploaded as file_\S+, expires /)
    expectReadingOrder(await glyphPositions(line, ["report", "fdp", "exe", "6 bytes", "uploaded", fileId, "expires"]), "upload line")
    expect(await isolated(line.locator(".file-name")), "the name is isolated from the sentence").toBe("isolate")

    // The list's row: not "reportexe.pdf".
    const list = page.getByRole("region", { name: "Files in the project" })
    const row = list.getByRole("row").filter({ hasText: fileId })
    const nameCell = row.getByRole("cell").first()
    await nameCell.waitFor()
    expect(await nameCell.textContent()).toBe(SHOWN)
    expectReadingOrder(await glyphPositions(nameCell, ["report", "fdp", "exe"]), "name cell")

    // Its metadata, opened from the row.
    await row.getByRole("button", { name: /^Metadata of / }).click()
    const shownName = list.locator("dd.file-name")
    await shownName.waitFor()
    expect(await shownName.textContent()).toBe(SHOWN)
    expectReadingOrder(await glyphPositions(shownName, ["report", "fdp", "exe"]), "metadata name")
    // The escape is marked as a character shown rather than applied.
    expect(await shownName.locator(".bidi-control").getAttribute("title")).toMatch(/right-to-left override/i)
    expect(await seriousViolations(page)).toEqual([])
    await screenshot(page, "bidi-files")
    await page.close()
  })

  it("shows an override in a tool's output as the JSON escape, and isolates the record's user id", async () => {
    const execution = await api.executions.execute({ tool: "demo.echo", input: { note: `abc${RLO}def, ghi` }, userId: "user_bidi" })
    const page = await h.browser.context.newPage()
    await signIn(page, `/dashboard/executions/${execution.executionId}`)
    const output = page.getByLabel("Output")
    await output.waitFor()
    expect(await output.textContent()).not.toContain(RLO)
    expect(await output.textContent()).toContain("abc\\u202edef, ghi")
    expectReadingOrder(await glyphPositions(output, ["abc", "def", "ghi"]), "output")
    // The record's user is isolated from what is around it.
    expect(await isolated(page.locator("dl.fields dd bdi").first())).toBe("isolate")
    await page.close()
  })
})
