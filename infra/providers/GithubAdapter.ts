/**
 * `github.create_issue` through the REST API. GitHub signals rate limits in three ways, all
 * normalized to `rate_limited`: 403 or 429 with `x-ratelimit-remaining: 0` and
 * `x-ratelimit-reset` (Unix seconds), 403 or 429 with `retry-after` (secondary limits), and a
 * 403/429 whose message names a secondary rate limit with neither header (GitHub's guidance is
 * then to wait at least a minute). Other 4xx are provider rejections; 5xx are outages.
 *
 * As with Slack, the base URL is operator configuration (SERVICE_GITHUB_API_URL), so the request
 * may reach private networks; owner and repo are constrained by the input codec and encoded, so
 * they can only ever form path segments under that base.
 */
import { Clock, Effect, Option, Schema } from "effect"
import { CreateIssueInput } from "../../domain/catalog/Github.ts"
import { ProviderError, ProviderUnavailable, RateLimited } from "../../domain/Errors.ts"
import type { OutboundHttp, OutboundResponse } from "../outbound/OutboundHttp.ts"
import type { AdapterFailure, ToolAdapter } from "./Adapter.ts"
import {
  credential,
  excerpt,
  parseJson,
  PROVIDER_MAX_BODY_BYTES,
  PROVIDER_REQUEST_TIMEOUT_MS,
  retryAfterSeconds,
  transportFailure,
  typedInput,
  utf8
} from "./Support.ts"

const TOOL = "github.create_issue"
const decode = typedInput(CreateIssueInput, TOOL)
export const USER_AGENT = "service-catalog-github/1.0"
const SECONDARY_LIMIT_WAIT_SECONDS = 60

const CreatedIssue = Schema.Struct({ number: Schema.Int, html_url: Schema.String, id: Schema.Int })
const GithubMessage = Schema.Struct({ message: Schema.String })

const githubMessage = (response: OutboundResponse): string =>
  Option.match(parseJson(GithubMessage, response.body), {
    onNone: () => excerpt(utf8(response.body)),
    onSome: ({ message }) => excerpt(message)
  })

/**
 * When the answer is a rate limit: the seconds to wait, `given` by GitHub's headers, or else the
 * least GitHub asks for (a secondary limit without headers: a minute, then longer). Else undefined.
 */
export const githubRateLimit = (response: OutboundResponse, nowMs: number): { readonly seconds: number; readonly given: boolean } | undefined => {
  if (response.status !== 403 && response.status !== 429) return undefined
  const retryAfter = retryAfterSeconds(response.headers["retry-after"], nowMs)
  if (retryAfter !== undefined) return { seconds: retryAfter, given: true }
  const reset = response.headers["x-ratelimit-reset"]
  if (response.headers["x-ratelimit-remaining"] === "0" && reset !== undefined && /^\d+$/.test(reset)) {
    return { seconds: Math.max(0, Math.ceil(Number(reset) - nowMs / 1000)), given: true }
  }
  if (response.status === 429 || /rate limit/i.test(githubMessage(response))) return { seconds: SECONDARY_LIMIT_WAIT_SECONDS, given: false }
  return undefined
}

/** Seconds to wait when the answer is a rate limit, else undefined. */
export const githubRateLimitWait = (response: OutboundResponse, nowMs: number): number | undefined => githubRateLimit(response, nowMs)?.seconds

export const interpretGithubReply = (
  response: OutboundResponse,
  nowMs: number
): Effect.Effect<{ readonly number: number; readonly url: string; readonly id: number }, AdapterFailure> => {
  const wait = githubRateLimitWait(response, nowMs)
  if (wait !== undefined) return Effect.fail(new RateLimited({ message: "GitHub rate limit reached", retryAfter: wait }))
  if (response.status >= 500) {
    return Effect.fail(new ProviderUnavailable({ message: `GitHub answered HTTP ${response.status}` }))
  }
  if (response.status !== 201) {
    return Effect.fail(
      new ProviderError({ message: `GitHub rejected the issue (HTTP ${response.status}): ${githubMessage(response)}` })
    )
  }
  return Option.match(parseJson(CreatedIssue, response.body), {
    onNone: () => Effect.fail(new ProviderError({ message: "GitHub answered 201 without an issue" })),
    onSome: (issue) => Effect.succeed({ number: issue.number, url: issue.html_url, id: issue.id })
  })
}

export const makeGithubAdapter = (http: OutboundHttp["Service"], apiUrl: string): ToolAdapter => ({
  tool: TOOL,
  run: Effect.fnUntraced(function*(input, context) {
    const { owner, repo, title, body } = yield* decode(input)
    const token = yield* credential(context, TOOL, ["token", "apiKey"])
    const response = yield* http.request({
      method: "POST",
      url: `${apiUrl}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/issues`,
      headers: {
        authorization: `Bearer ${token}`,
        accept: "application/vnd.github+json",
        "x-github-api-version": "2022-11-28",
        "user-agent": USER_AGENT,
        "content-type": "application/json; charset=utf-8"
      },
      body: JSON.stringify(body === undefined ? { title } : { title, body }),
      timeoutMs: PROVIDER_REQUEST_TIMEOUT_MS,
      maxBodyBytes: PROVIDER_MAX_BODY_BYTES,
      allowPrivateNetworks: true
    }).pipe(Effect.mapError(transportFailure("GitHub")))
    return yield* interpretGithubReply(response, yield* Clock.currentTimeMillis)
  })
})
