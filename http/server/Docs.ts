/**
 * `/openapi.json` and `/docs` on the service's port, routes of the API's router (no key): the OpenAPI
 * document of http/api/OpenApiDocument.ts, and a Scalar reference page built on it.
 *
 * The page makes no request to another host: Scalar's script is the copy bundled with Effect,
 * inlined; its default fonts (fetched from fonts.scalar.com) are turned off; and the answer's
 * Content-Security-Policy allows nothing but this origin, inline script and style, so a link in
 * the bundle cannot load anything either. Both answers are built once, compressed once (brotli
 * and gzip, chosen by Accept-Encoding; the page is 3.3 MB as is, 0.77 MB as brotli, built in
 * about 0.3 s at the first request), and
 * carry an ETag, so a reload costs a 304.
 */
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createHash } from "node:crypto"
import { promisify } from "node:util"
import { brotliCompress, constants, gzip } from "node:zlib"
import { normalized } from "../../domain/Errors.ts"
import { openApiDocument } from "../api/OpenApiDocument.ts"
import { chooseEncoding } from "./Dashboard.ts"
import { EdgeFailure } from "./Envelope.ts"

export const OPENAPI_PATH = "/openapi.json"
export const DOCS_PATH = "/docs"

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'unsafe-inline'",
  "style-src 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'"
].join("; ")

interface Encoded {
  readonly identity: Uint8Array
  readonly br: Uint8Array
  readonly gzip: Uint8Array
  readonly etag: string
}

const compressBrotli = promisify(brotliCompress)
const compressGzip = promisify(gzip)

const encodeAll = async (text: string): Promise<Encoded> => {
  const identity = Buffer.from(text)
  const [br, gz] = await Promise.all([
    compressBrotli(identity, { params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: identity.length } }),
    compressGzip(identity, { level: 6 })
  ])
  return { identity, br, gzip: gz, etag: `"${createHash("sha256").update(identity).digest("base64url").slice(0, 27)}"` }
}

/** Escapes JSON for a `<script>` element: no `</script>`, no line terminators JavaScript refuses. */
const scriptJson = (value: unknown): string =>
  JSON.stringify(value).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029")

const escapeHtml = (text: string): string => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

const page = async (): Promise<string> => {
  // Effect's bundled copy of Scalar's standalone script (3.2 MB, what HttpApiScalar.layer inlines),
  // loaded when first asked for. Its module is internal to the pinned `effect`, outside the
  // package's exports, so it is imported by file; test/http/OpenApi.test.ts loads the page.
  const scalar = new URL("./http-api/internal/httpApiScalar.js", import.meta.resolve("effect"))
  const { javascript } = (await import(scalar.href)) as { readonly javascript: string }
  const spec = openApiDocument()
  const config = { _integration: "html", withDefaultFonts: false, content: spec }
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>${escapeHtml(String(spec.info?.title ?? "API"))}</title>
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <link rel="icon" href="data:," />
    <style>body { margin: 0; font-family: system-ui, sans-serif; }</style>
  </head>
  <body>
    <div id="api-reference-container"></div>
    <script>${javascript.replace(/<\/script/gi, "<\\/script")}</script>
    <script>window.Scalar.createApiReference(document.getElementById("api-reference-container"), ${scriptJson(config)})</script>
  </body>
</html>`
}

const memo = <A>(make: () => Promise<A>): () => Promise<A> => {
  let value: Promise<A> | undefined
  return () => (value ??= make())
}

const documentBytes = memo(() => encodeAll(JSON.stringify(openApiDocument())))
const pageBytes = memo(async () => encodeAll(await page()))

const send = (
  request: HttpServerRequest.HttpServerRequest,
  encoded: Encoded,
  headers: Record<string, string>
): HttpServerResponse.HttpServerResponse => {
  const common = { ...headers, etag: encoded.etag, vary: "Accept-Encoding", "cache-control": "no-cache", "x-content-type-options": "nosniff" }
  if (request.headers["if-none-match"] === encoded.etag) return HttpServerResponse.empty({ status: 304, headers: common })
  const encoding = chooseEncoding(request.headers["accept-encoding"])
  const body = encoded[encoding]
  const all = encoding === "identity" ? common : { ...common, "content-encoding": encoding }
  if (request.method === "HEAD") return HttpServerResponse.empty({ status: 200, headers: { ...all, "content-length": String(body.byteLength) } })
  return HttpServerResponse.uint8Array(body, { status: 200, headers: all, contentType: headers["content-type"] ?? "application/octet-stream" })
}

const serving = (bytes: () => Promise<Encoded>, headers: Record<string, string>) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    Effect.tryPromise({
      try: () => bytes(),
      catch: () => new EdgeFailure(500, normalized("provider_unavailable", "The API document could not be built."))
    }).pipe(Effect.map((encoded) => send(request, encoded, headers))))

/** The two routes, added to the API's router: the edge's rules (methods, bodies) apply as to any route. */
export const DocsRoutes = HttpRouter.use((router) =>
  Effect.all([
    router.add("GET", OPENAPI_PATH, serving(documentBytes, { "content-type": "application/json" })),
    router.add("GET", DOCS_PATH, serving(pageBytes, {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": CONTENT_SECURITY_POLICY,
      "referrer-policy": "no-referrer"
    }))
  ], { discard: true })
)
