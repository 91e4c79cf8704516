/**
 * The dashboard's files, served at `/dashboard` on the service's own port (decisions.md 8).
 *
 * The files are built from `dashboard/src` into `dashboard/dist` by `dashboard/scripts/build.ts`
 * (`npm start` and `npm test` run it first; the output is not in git). They are served beside the
 * API, not through it: no key (the page is public, the key is typed into it), no JSON body rules,
 * no router. Every answer carries a Content-Security-Policy that allows only the dashboard's own
 * scripts, styles and API calls, so text from the API can never run as code even if it reached
 * the DOM as markup.
 *
 * - `/dashboard/assets/<name>`: a built file. Its name carries its content hash, so it is cached
 *   for a year as immutable; precompressed copies (`.br`, `.gz`, written by the build) are sent
 *   as Accept-Encoding allows.
 * - Any other `/dashboard` path: `index.html` (the app routes on the client), `no-cache` so a new
 *   build is picked up at once.
 */
import { Effect } from "effect"
import { type HttpServerRequest, type HttpServerResponse, HttpServerResponse as Response } from "effect/http"
import { readFile, stat } from "node:fs/promises"
import { fileURLToPath } from "node:url"
import { normalized } from "../../domain/Errors.ts"
import { EdgeFailure, methodNotAllowed } from "./Envelope.ts"

export const DASHBOARD_ROOT = fileURLToPath(new URL("../../dashboard/dist/", import.meta.url))

export const isDashboardPath = (path: string): boolean => path === "/dashboard" || path.startsWith("/dashboard/")

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "connect-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'"
].join("; ")

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin"
}

const IMMUTABLE = "public, max-age=31536000, immutable"

const TYPES: Readonly<Record<string, string>> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png"
}

/** A built asset's name: content-hashed by the build, and never a path (no `/`, no `..`). */
const ASSET_NAME = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/

type Encoding = "br" | "gzip" | "identity"

/** The best encoding the client accepts (q > 0) among those the build wrote. */
export const chooseEncoding = (header: string | undefined): Encoding => {
  const accepted = new Map<string, number>()
  for (const part of (header ?? "").split(",")) {
    const [name = "", ...parameters] = part.trim().toLowerCase().split(";")
    const q = parameters.map((p) => p.trim()).find((p) => p.startsWith("q="))
    accepted.set(name.trim(), q === undefined ? 1 : Number(q.slice(2)) || 0)
  }
  const wants = (name: string) => (accepted.get(name) ?? accepted.get("*") ?? 0) > 0
  return wants("br") ? "br" : wants("gzip") ? "gzip" : "identity"
}

const SUFFIX: Readonly<Record<Encoding, string>> = { br: ".br", gzip: ".gz", identity: "" }

const readOptional = (path: string): Promise<Uint8Array | undefined> => readFile(path).catch(() => undefined)

const answer = (status: number, body: Uint8Array | string, headers: Record<string, string>, head: boolean): HttpServerResponse.HttpServerResponse => {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body
  const all = { ...SECURITY_HEADERS, ...headers }
  // HEAD: the same headers, no body (Node would drop it, but the length must be the GET's).
  return head
    ? Response.empty({ status, headers: { ...all, "content-length": String(bytes.byteLength) } })
    : Response.uint8Array(bytes, { status, headers: all, contentType: all["content-type"] ?? "text/plain; charset=utf-8" })
}

/** An error in the envelope every route answers with (decisions.md section 2), its requestId in it. */
const failed = (failure: EdgeFailure, requestId: string, head: boolean) =>
  answer(
    failure.status,
    JSON.stringify({ error: failure.error, requestId }),
    { "content-type": "application/json", "cache-control": "no-store", ...failure.headers },
    head
  )

/** One file from the build, in the chosen encoding when a precompressed copy exists. */
const sendFile = async (file: string, cacheControl: string, acceptEncoding: string | undefined, head: boolean) => {
  const extension = file.slice(file.lastIndexOf("."))
  const encoding = chooseEncoding(acceptEncoding)
  const encoded = encoding === "identity" ? undefined : await readOptional(file + SUFFIX[encoding])
  const body = encoded ?? (await readOptional(file))
  if (body === undefined) return undefined
  const headers: Record<string, string> = {
    "content-type": TYPES[extension] ?? "application/octet-stream",
    "cache-control": cacheControl,
    vary: "Accept-Encoding"
  }
  if (encoded !== undefined) headers["content-encoding"] = encoding
  return answer(200, body, headers, head)
}

const missing = (message: string) => new EdgeFailure(404, normalized("not_found", message))

const notBuilt = new EdgeFailure(
  503,
  normalized("provider_unavailable", "The dashboard is not built: run `npm run build:dashboard` (npm start and npm test do it).")
)

const serve = async (request: HttpServerRequest.HttpServerRequest, path: string, requestId: string): Promise<HttpServerResponse.HttpServerResponse> => {
  const head = request.method === "HEAD"
  // A wrong method: 405 with the methods it takes.
  if (request.method !== "GET" && !head) return failed(methodNotAllowed(["GET", "HEAD"]), requestId, false)
  const acceptEncoding = request.headers["accept-encoding"]
  if (path.startsWith("/dashboard/assets/")) {
    const name = path.slice("/dashboard/assets/".length)
    const file = ASSET_NAME.test(name) ? await sendFile(DASHBOARD_ROOT + "assets/" + name, IMMUTABLE, acceptEncoding, head) : undefined
    return file ?? failed(missing("No such dashboard file."), requestId, head)
  }
  const index = await sendFile(DASHBOARD_ROOT + "index.html", "no-cache", acceptEncoding, head)
  if (index !== undefined) return index
  const built = (await stat(DASHBOARD_ROOT).catch(() => undefined)) !== undefined
  return failed(built ? missing("No index.html in the dashboard build.") : notBuilt, requestId, head)
}

/** Answers every request whose path is a dashboard path; the edge adds the request id header. */
export const serveDashboard = (
  request: HttpServerRequest.HttpServerRequest,
  path: string,
  requestId: string
): Effect.Effect<HttpServerResponse.HttpServerResponse> => Effect.promise(() => serve(request, path, requestId))
