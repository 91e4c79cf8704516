/**
 * The GitHub issues list, as the `github.issue_opened` pollers read it (decisions.md section 5):
 * `GET {api}/repos/{owner}/{repo}/issues?state=all&sort=created&direction=asc&since=…&per_page=100`
 * with the connection's token and `If-None-Match`, and the answer sorted into what the poller
 * does next: a listed page (with its ETag and the next page's URL), not modified, refused (401,
 * 403 that is no rate limit, any other 4xx: the cadence holds), or back off (429, a rate-limiting
 * 403, 5xx, transport failures; with the provider's wait when it gave one).
 *
 * The base URL is operator configuration (SERVICE_GITHUB_API_URL); a `next` link is followed only
 * under it, so a provider answer can never send the token elsewhere.
 */
import { Effect, Schema } from "effect"
import { nextLink } from "../../domain/triggers/Polling.ts"
import type { OutboundHttp } from "../outbound/OutboundHttp.ts"
import { githubRateLimit, USER_AGENT } from "./GithubAdapter.ts"
import { retryAfterSeconds, utf8 } from "./Support.ts"

export const ISSUES_PER_PAGE = 100
/** A page of 100 issues with long bodies stays well under this. */
const MAX_PAGE_BYTES = 16 * 1024 * 1024

export type IssuesAnswer =
  | {
    readonly kind: "listed"
    readonly items: ReadonlyArray<unknown>
    readonly etag?: string | undefined
    readonly next?: string | undefined
  }
  | { readonly kind: "not_modified" }
  | { readonly kind: "refused"; readonly status: number }
  | {
    readonly kind: "backoff"
    readonly waitMs?: number | undefined
    readonly minimumMs?: number | undefined
    /** What went wrong, for the operator's log line: a status, or the transport's failure. */
    readonly reason: string
  }

export interface IssuesQuery {
  readonly owner: string
  readonly repo: string
  readonly since: string
}

export const firstPageUrl = (apiUrl: string, query: IssuesQuery): string => {
  const params = new URLSearchParams({ state: "all", sort: "created", direction: "asc", since: query.since, per_page: String(ISSUES_PER_PAGE) })
  return `${apiUrl}/repos/${encodeURIComponent(query.owner)}/${encodeURIComponent(query.repo)}/issues?${params}`
}

const decodeItems = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Array(Schema.Unknown)))

/** The `since`-independent fields a poller needs of a listed item, when it has them. */
const ListedTimes = Schema.Struct({ created_at: Schema.String, updated_at: Schema.String })
export const listedTimes = Schema.decodeUnknownOption(ListedTimes)

export const interpretIssuesAnswer = (
  response: { readonly status: number; readonly headers: Readonly<Record<string, string>>; readonly body: Uint8Array; readonly bodyTruncated: boolean },
  apiUrl: string,
  nowMs: number
): IssuesAnswer => {
  if (response.status === 304) return { kind: "not_modified" }
  const rateLimited = githubRateLimit(response, nowMs)
  if (rateLimited !== undefined) {
    const reason = `GitHub answered ${response.status} (rate limited)`
    return rateLimited.given ? { kind: "backoff", waitMs: rateLimited.seconds * 1000, reason } : { kind: "backoff", minimumMs: rateLimited.seconds * 1000, reason }
  }
  if (response.status >= 500) {
    const wait = retryAfterSeconds(response.headers["retry-after"], nowMs)
    return { kind: "backoff", waitMs: wait === undefined ? undefined : wait * 1000, reason: `GitHub answered ${response.status}` }
  }
  if (response.status !== 200) return { kind: "refused", status: response.status }
  if (response.bodyTruncated) return { kind: "backoff", reason: `GitHub's answer was larger than ${MAX_PAGE_BYTES} bytes` }
  const items = decodeItems(utf8(response.body))
  if (items._tag === "None") return { kind: "backoff", reason: "GitHub's answer was not a JSON list of issues" }
  const next = nextLink(response.headers["link"])
  return {
    kind: "listed",
    items: items.value,
    etag: response.headers["etag"],
    next: next !== undefined && next.startsWith(`${apiUrl}/`) ? next : undefined
  }
}

/** One page: the first (`url` unset, with the ETag) or a `next` link. */
export const fetchIssuesPage = (
  http: OutboundHttp["Service"],
  options: { readonly apiUrl: string; readonly token: string; readonly url: string; readonly etag?: string | undefined; readonly timeoutMs: number; readonly nowMs: number }
): Effect.Effect<IssuesAnswer> =>
  http.request({
    method: "GET",
    url: options.url,
    headers: {
      authorization: `Bearer ${options.token}`,
      accept: "application/vnd.github+json",
      "x-github-api-version": "2022-11-28",
      "user-agent": USER_AGENT,
      ...(options.etag !== undefined ? { "if-none-match": options.etag } : {})
    },
    timeoutMs: options.timeoutMs,
    maxBodyBytes: MAX_PAGE_BYTES,
    allowPrivateNetworks: true
  }).pipe(
    Effect.map((response) => interpretIssuesAnswer(response, options.apiUrl, options.nowMs)),
    Effect.catchTag("OutboundHttpError", (error) => Effect.succeed<IssuesAnswer>({ kind: "backoff", reason: `the request to GitHub failed: ${error.reason}` }))
  )
