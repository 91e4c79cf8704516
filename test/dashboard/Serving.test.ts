/**
 * How the service serves the dashboard (http/server/Dashboard.ts): no key needed, index.html for
 * client routes, the security headers on every answer, compression by Accept-Encoding, and
 * cache headers by kind of file; the API's own rules stay as they were.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { gunzipSync, brotliDecompressSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DIST, ensureDashboard } from "../../dashboard/scripts/build.ts"
import { chooseEncoding } from "../../http/server/Dashboard.ts"
import { type InProcessService, startService } from "../support/Service.ts"

const CSP = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

const expectSecurityHeaders = (response: Response) => {
  expect(response.headers.get("content-security-policy")).toBe(CSP)
  expect(response.headers.get("content-security-policy")).not.toContain("unsafe-inline")
  expect(response.headers.get("x-content-type-options")).toBe("nosniff")
  expect(response.headers.get("referrer-policy")).toBe("no-referrer")
  expect(response.headers.get("request-id")).toMatch(/^req_/)
}

describe("the dashboard's files", () => {
  let service: InProcessService
  let script: string
  let stylesheet: string
  beforeAll(async () => {
    const { record } = await ensureDashboard()
    script = record.script
    stylesheet = record.stylesheet
    service = await startService()
  })
  afterAll(() => service.close())

  it("answers index.html without a key, for /dashboard and every client route, never cached stale", async () => {
    const index = readFileSync(join(DIST, "index.html"), "utf8")
    for (const path of ["/dashboard", "/dashboard/", "/dashboard/webhooks", "/dashboard/webhooks/whe_x", "/dashboard/executions?status=failed"]) {
      const response = await service.fetch(path, { key: null, headers: { "accept-encoding": "identity" } })
      expect(response.status, path).toBe(200)
      expectSecurityHeaders(response)
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8")
      expect(response.headers.get("cache-control")).toBe("no-cache")
      expect(await response.text()).toBe(index)
    }
    // No inline script or style: everything comes from hashed files the CSP allows.
    expect(index).toContain(`<script type="module" src="/dashboard/assets/${script}"></script>`)
    expect(index).toContain(`<link rel="stylesheet" href="/dashboard/assets/${stylesheet}">`)
    expect(index).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
    expect(index).not.toMatch(/<style|style=/)
  })

  it("serves hashed assets compressed as asked, cached for a year as immutable", async () => {
    const raw = readFileSync(join(DIST, "assets", script))
    const asBrotli = await fetch(`${service.baseUrl}/dashboard/assets/${script}`, { headers: { "accept-encoding": "gzip, br" } })
    expect(asBrotli.status).toBe(200)
    expectSecurityHeaders(asBrotli)
    expect(asBrotli.headers.get("content-encoding")).toBe("br")
    expect(asBrotli.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
    expect(asBrotli.headers.get("vary")).toBe("Accept-Encoding")
    expect(asBrotli.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
    // fetch decodes what it asked for; the bytes are the built file's.
    expect(Buffer.from(await asBrotli.arrayBuffer()).equals(raw)).toBe(true)

    const css = await service.fetch(`/dashboard/assets/${stylesheet}`, { key: null, headers: { "accept-encoding": "gzip" } })
    expect(css.headers.get("content-encoding")).toBe("gzip")
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8")

    // What goes over the wire, undecoded: node:http, not fetch.
    const { request } = await import("node:http")
    const wire = (encoding: string) =>
      new Promise<{ headers: Record<string, unknown>; body: Buffer }>((done, fail) => {
        request(`${service.baseUrl}/dashboard/assets/${script}`, { headers: { "accept-encoding": encoding } }, (response) => {
          const chunks: Array<Buffer> = []
          response.on("data", (chunk: Buffer) => chunks.push(chunk))
          response.on("end", () => done({ headers: response.headers, body: Buffer.concat(chunks) }))
        }).on("error", fail).end()
      })
    const br = await wire("br")
    expect(br.headers["content-encoding"]).toBe("br")
    expect(br.body.length).toBeLessThan(raw.length / 2)
    expect(brotliDecompressSync(br.body).equals(raw)).toBe(true)
    const gz = await wire("gzip;q=1, br;q=0")
    expect(gz.headers["content-encoding"]).toBe("gzip")
    expect(gunzipSync(gz.body).equals(raw)).toBe(true)
    const plain = await wire("identity")
    expect(plain.headers["content-encoding"]).toBeUndefined()
    expect(plain.body.equals(raw)).toBe(true)
  })

  it("refuses other methods, unknown assets and paths that try to leave the build, with the same headers", async () => {
    const post = await service.fetch("/dashboard", { key: null, method: "POST", body: "not json", headers: { "content-type": "text/plain" } })
    expect(post.status).toBe(405)
    expect(post.headers.get("allow")).toBe("GET, HEAD")
    expectSecurityHeaders(post)
    // decisions.md section 2: a wrong method on a known path is 405 `invalid_input`, in the envelope.
    expect(post.headers.get("content-type")).toMatch(/^application\/json/)
    expect(await post.json()).toEqual({
      error: { code: "invalid_input", message: "The method is not allowed on this path.", retryable: false },
      requestId: post.headers.get("request-id")
    })
    for (const path of ["/dashboard/assets/nope.js", "/dashboard/assets/..%2Fbuild.json", "/dashboard/assets/"]) {
      const response = await service.fetch(path, { key: null })
      expect(response.status, path).toBe(404)
      expectSecurityHeaders(response)
      // Outside audit: these were plain text; every error is the envelope with its requestId.
      expect(response.headers.get("content-type"), path).toMatch(/^application\/json/)
      const body = await response.text()
      expect(body).not.toContain("inputsDigest")
      expect(JSON.parse(body), path).toEqual({
        error: { code: "not_found", message: "No such dashboard file.", retryable: false },
        requestId: response.headers.get("request-id")
      })
    }
    // fetch resolves `..` itself: that is /dashboard/build.json, a client route, so index.html.
    const dotted = await service.fetch("/dashboard/assets/../build.json", { key: null })
    expect(await dotted.text()).not.toContain("inputsDigest")
    const head = await service.fetch("/dashboard", { key: null, method: "HEAD" })
    expect(head.status).toBe(200)
    expect(await head.text()).toBe("")
  })

  it("leaves the API as it was: keys, JSON errors and unknown routes", async () => {
    const me = await service.fetch("/v1/me", { key: null })
    expect(me.status).toBe(401)
    expect(me.headers.get("content-security-policy")).toBeNull()
    const unknown = await service.fetch("/dashboards", { key: null })
    expect(unknown.status).toBe(404)
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe("not_found")
  })

  it("renders what the API says as text: no raw HTML anywhere in the dashboard's source", () => {
    const sources = readdirSync(join(DIST, "../src"), { recursive: true, encoding: "utf8" }).filter((file) => /\.tsx?$/.test(file))
    expect(sources.length).toBeGreaterThan(10)
    for (const file of sources) {
      const source = readFileSync(join(DIST, "../src", file), "utf8")
      expect(source, file).not.toMatch(/dangerouslySetInnerHTML|innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/)
      expect(source, file).not.toMatch(/console\.|localStorage\.|document\.cookie/)
    }
  })

  it("chooses br, then gzip, as the Accept-Encoding header allows", () => {
    expect(chooseEncoding(undefined)).toBe("identity")
    expect(chooseEncoding("gzip, deflate, br, zstd")).toBe("br")
    expect(chooseEncoding("gzip")).toBe("gzip")
    expect(chooseEncoding("br;q=0, gzip;q=0.5")).toBe("gzip")
    expect(chooseEncoding("*")).toBe("br")
    expect(chooseEncoding("identity, br;q=0, gzip;q=0")).toBe("identity")
  })
})
