/**
 * `slack.post_message` through the Web API. Slack reports most rejections as HTTP 200 with
 * `{ok: false, error}`, rate limits as HTTP 429 with Retry-After (or, rarely, `ratelimited` in
 * the body), and outages as 5xx.
 *
 * The base URL is operator configuration (SERVICE_SLACK_API_URL), so the request is sent with
 * `allowPrivateNetworks: true`: an on-premises proxy or the tests' local fake may live on a
 * private address. Only the fixed path is appended; no user input reaches the host.
 */
import { Clock, Effect, Option, Schema } from "effect"
import { PostMessageInput } from "../../domain/catalog/Slack.ts"
import { ProviderError, ProviderUnavailable, RateLimited } from "../../domain/Errors.ts"
import type { OutboundHttp, OutboundResponse } from "../outbound/OutboundHttp.ts"
import type { AdapterFailure, ToolAdapter } from "./Adapter.ts"
import {
  credential,
  parseJson,
  PROVIDER_MAX_BODY_BYTES,
  PROVIDER_REQUEST_TIMEOUT_MS,
  retryAfterSeconds,
  transportFailure,
  typedInput
} from "./Support.ts"

const TOOL = "slack.post_message"
const decode = typedInput(PostMessageInput, TOOL)

const SlackReply = Schema.Struct({
  ok: Schema.Boolean,
  error: Schema.optionalKey(Schema.String),
  channel: Schema.optionalKey(Schema.String),
  ts: Schema.optionalKey(Schema.String)
})

const rateLimited = (retryAfter: number | undefined) =>
  new RateLimited(
    retryAfter === undefined
      ? { message: "Slack rate limit reached" }
      : { message: "Slack rate limit reached", retryAfter }
  )

/** The tool output for a Slack answer, or the normalized failure it stands for. */
export const interpretSlackReply = (
  response: OutboundResponse,
  nowMs: number
): Effect.Effect<{ readonly channel: string; readonly ts: string }, AdapterFailure> => {
  const retryAfter = retryAfterSeconds(response.headers["retry-after"], nowMs)
  if (response.status === 429) return Effect.fail(rateLimited(retryAfter))
  if (response.status >= 500) {
    return Effect.fail(new ProviderUnavailable({ message: `Slack answered HTTP ${response.status}` }))
  }
  const reply = parseJson(SlackReply, response.body)
  if (Option.isNone(reply)) {
    return Effect.fail(new ProviderError({ message: `Slack answered HTTP ${response.status} without a Web API reply` }))
  }
  const { ok, error, channel, ts } = reply.value
  if (!ok) {
    if (error === "ratelimited" || error === "rate_limited") return Effect.fail(rateLimited(retryAfter))
    return Effect.fail(new ProviderError({ message: `Slack rejected chat.postMessage: ${error ?? "unknown_error"}` }))
  }
  if (response.status !== 200 || channel === undefined || ts === undefined) {
    return Effect.fail(new ProviderError({ message: `Slack answered HTTP ${response.status} with an incomplete reply` }))
  }
  return Effect.succeed({ channel, ts })
}

export const makeSlackAdapter = (http: OutboundHttp["Service"], apiUrl: string): ToolAdapter => ({
  tool: TOOL,
  run: Effect.fnUntraced(function*(input, context) {
    const { channel, text } = yield* decode(input)
    const token = yield* credential(context, TOOL, ["token"])
    const response = yield* http.request({
      method: "POST",
      url: `${apiUrl}/chat.postMessage`,
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json; charset=utf-8",
        accept: "application/json"
      },
      body: JSON.stringify({ channel, text }),
      timeoutMs: PROVIDER_REQUEST_TIMEOUT_MS,
      maxBodyBytes: PROVIDER_MAX_BODY_BYTES,
      allowPrivateNetworks: true
    }).pipe(Effect.mapError(transportFailure("Slack")))
    return yield* interpretSlackReply(response, yield* Clock.currentTimeMillis)
  })
})
