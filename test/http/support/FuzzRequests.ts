/**
 * Arbitrary HTTP requests for the fuzz test: routes of the running API (with their parameters
 * filled by junk) and made-up paths, any method, any key, content type, headers and body,
 * including bodies past the JSON ceiling.
 */
import fc from "fast-check"
import type { Route } from "../../../http/server/Edge.ts"
import { KEY, OTHER_KEY, PINNED_KEY } from "../../support/Service.ts"

export interface FuzzRequest {
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
  /** Send the body in chunks without a Content-Length. */
  readonly chunked: boolean
}

// Header values Node accepts: tab, printable ASCII and Latin-1.
const headerChar = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
  { weight: 1, arbitrary: fc.integer({ min: 0xa0, max: 0xff }) }
).map((code) => String.fromCharCode(code))
const headerValue = (maxLength = 40) => fc.string({ unit: headerChar, maxLength }).map((s) => s.trim())

const segment = fc.oneof(
  fc.constantFrom("..", ".", "%2e%2e", "%2E", "%2F", "%5C", "%00", "%zz", "%", "%e9", "%C3%A9", "v1", "me", "health", "~", "a;b=c", "*", "", "\u00e9", "docs"),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.string({ unit: "grapheme", maxLength: 6 }).map(encodeURIComponent),
  fc.stringMatching(/^[A-Za-z0-9_.-]{1,70}$/)
)

const query = fc.oneof(
  { weight: 4, arbitrary: fc.constant("") },
  { weight: 1, arbitrary: fc.constantFrom("?", "?limit=abc", "?limit=-1", "?cursor=%zz", "?a=1&a=2", "?%00=1", "?limit=1000000000000") },
  { weight: 1, arbitrary: fc.array(fc.tuple(segment, segment), { maxLength: 3 }).map((kv) => `?${kv.map(([k, v]) => `${k}=${v}`).join("&")}`) }
)

/** A declared route with each `:param` replaced by junk or by something plausible. */
const routePath = (routes: ReadonlyArray<Route>) =>
  fc.constantFrom(...routes).chain((route) =>
    fc.tuple(
      fc.constant(route),
      fc.array(fc.oneof(segment, fc.constantFrom("exe_00000000000000000000000000", "file_x", "user_1")), {
        minLength: 8,
        maxLength: 8
      }),
      fc.boolean()
    ).map(([r, params, slash]) => {
      let i = 0
      const path = r.path.split("/").map((part) => (part.startsWith(":") ? params[i++] ?? "x" : part)).join("/")
      return { route: r, path: slash && !path.endsWith("/") ? `${path}/` : path }
    })
  )

const madeUpPath = fc.array(segment, { minLength: 0, maxLength: 6 }).map((parts) => `/${parts.join("/")}`)

const method = (route: Route | undefined) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constant(route?.method ?? "GET") },
    { weight: 3, arbitrary: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS") },
    { weight: 1, arbitrary: fc.stringMatching(/^[A-Z]{3,10}$/) }
  )

const authorization = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(`Bearer ${KEY}`, `Bearer ${PINNED_KEY}`, `Bearer ${OTHER_KEY}`) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  {
    weight: 2,
    arbitrary: fc.constantFrom("Bearer", "Bearer ", `Basic ${KEY}`, `bearer ${KEY}`, `Bearer  ${KEY}`, `Bearer ${KEY}x`, `Bearer sk_${"A".repeat(40)}`, "Bearer " + "k".repeat(5000))
  },
  { weight: 1, arbitrary: headerValue(80).map((v) => `Bearer ${v}`) }
)

const contentType = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "APPLICATION/JSON",
    "application/merge-patch+json",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/jsonx",
    "json",
    ""
  ),
  headerValue(30)
)

const userHeader = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.constantFrom("user_1", "user_2", "", " ", "a".repeat(65), "bad user!", "user\u00e9", "../user_1") },
  { weight: 1, arbitrary: headerValue(70) }
)

// Headers the client manages itself, or that change how the exchange works.
const RESERVED = new Set([
  "host", "content-length", "transfer-encoding", "connection", "expect", "upgrade", "te", "trailer", "keep-alive",
  "authorization", "content-type", "x-service-user-id", "proxy-authorization", "proxy-connection"
])
const extraHeaders = fc.dictionary(
  fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/).filter((name) => !RESERVED.has(name)),
  headerValue(),
  { maxKeys: 4 }
)

const jsonBody = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }).map((v) => JSON.stringify(v)),
  fc.record({ toolkit: fc.string(), tool: fc.anything(), input: fc.anything(), unknownField: fc.anything() }).map((v) => JSON.stringify(v) ?? "{}")
)

const malformedBody = fc.oneof(
  fc.constantFrom("{", "}", "{\"a\":}", "[1,2", "nul", "{'a':1}", "\u0000", "{\"a\":1}}", "\ufeff{}", "NaN", "{\"a\":1e999999}"),
  fc.string({ maxLength: 60 })
)

/** Past the 1 MiB JSON ceiling (or just under it); built, not generated, so it is quick. */
const hugeBody = fc.tuple(fc.integer({ min: 1024 * 1024 - 64, max: 2 * 1024 * 1024 + 1024 }), fc.constantFrom("a", "\u00e9", " ")).map(
  ([size, char]) => `{"data":"${char.repeat(Math.floor(size / Buffer.byteLength(char)))}"}`
)

/**
 * JSON the event log cannot keep, or that strains a parser: NUL characters and lone surrogates
 * (as escapes, in values and keys), nesting far past the limit, numbers past a double's range.
 */
const poison = fc.constantFrom(
  `"x\\u0000y"`,
  `"\\ud800"`,
  `"a\\udc00b"`,
  `{"k\\u0000":1}`,
  `${"[".repeat(200)}${"]".repeat(200)}`,
  `${"[".repeat(5000)}1${"]".repeat(5000)}`,
  `${"{\"a\":".repeat(100)}1${"}".repeat(100)}`,
  "1e400",
  "-1e-400",
  "123456789012345678901234567890123456789",
  `"\\ud83d\\ude00"`
)
const poisonedBody = fc.tuple(poison, fc.constantFrom("input", "name", "url", "credentials", "content", "events")).map(
  ([value, field]) => `{"tool":"demo.echo","userId":"user_1","${field}":${value},"input":{"v":${value}}}`
)

const body = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: jsonBody },
  { weight: 2, arbitrary: poisonedBody },
  { weight: 3, arbitrary: malformedBody },
  { weight: 1, arbitrary: hugeBody }
)

export const fuzzRequest = (routes: ReadonlyArray<Route>): fc.Arbitrary<FuzzRequest> =>
  fc.oneof(
    { weight: 3, arbitrary: routePath(routes) },
    { weight: 1, arbitrary: madeUpPath.map((path) => ({ route: undefined, path })) }
  ).chain(({ route, path }) =>
    fc.record({
      method: method(route),
      path: query.map((q) => `${path}${q}`),
      authorization,
      contentType,
      user: userHeader,
      extra: extraHeaders,
      body,
      chunked: fc.boolean()
    }).map(({ authorization: auth, contentType: type, user, extra, body: payload, chunked, ...rest }) => {
      const headers: Record<string, string> = { ...extra }
      if (auth !== undefined) headers.authorization = auth
      if (type !== undefined) headers["content-type"] = type
      if (user !== undefined) headers["x-service-user-id"] = user
      return { ...rest, headers, body: payload, chunked: chunked && payload !== undefined }
    })
  )
