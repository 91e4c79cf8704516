/**
 * The adapter registry: every catalog tool mapped to its adapter. Building it checks that the
 * two agree, so a tool added to the catalog without an adapter stops the process at start-up
 * instead of failing its first execution.
 */
import { Effect, Layer } from "effect"
import { listTools } from "../../domain/catalog/index.ts"
import { httpUrl } from "../Settings.ts"
import { OutboundHttp } from "../outbound/OutboundHttp.ts"
import { Adapters, type ToolAdapter } from "./Adapter.ts"
import { demoAdapters } from "./DemoAdapters.ts"
import { makeGithubAdapter } from "./GithubAdapter.ts"
import { makeHttpAdapter } from "./HttpAdapter.ts"
import { makeSlackAdapter } from "./SlackAdapter.ts"

export { Adapters, type AdapterContext, type AdapterFailure, type ExecutionFiles, type ToolAdapter } from "./Adapter.ts"

/** The registry over `adapters`; dies if a catalog tool has none or a name is unknown or doubled. */
export const makeAdapters = (adapters: ReadonlyArray<ToolAdapter>): Adapters["Service"] => {
  const byTool = new Map(adapters.map((adapter) => [adapter.tool, adapter]))
  const catalog = new Set(listTools().map((tool) => tool.name))
  const missing = [...catalog].filter((name) => !byTool.has(name))
  const unknown = [...byTool.keys()].filter((name) => !catalog.has(name))
  if (missing.length > 0 || unknown.length > 0 || byTool.size !== adapters.length) {
    throw new Error(`Adapters do not match the catalog: missing [${missing.join(", ")}], unknown [${unknown.join(", ")}]`)
  }
  return Adapters.of({ get: (tool) => byTool.get(tool) })
}

export const allAdapters = (http: OutboundHttp["Service"], config: { readonly slackApiUrl: string; readonly githubApiUrl: string }) => [
  ...demoAdapters,
  makeHttpAdapter(http),
  makeSlackAdapter(http, config.slackApiUrl),
  makeGithubAdapter(http, config.githubApiUrl)
]

/** Every catalog tool's adapter, over the guarded outbound client and the configured provider URLs. */
/** SERVICE_SLACK_API_URL and SERVICE_GITHUB_API_URL (tests point them at local fakes). */
export const providerUrls = Effect.all({
  slackApiUrl: httpUrl("SERVICE_SLACK_API_URL", "https://slack.com/api"),
  githubApiUrl: httpUrl("SERVICE_GITHUB_API_URL", "https://api.github.com")
})

/** Every catalog tool's adapter, over the guarded outbound client and the configured provider URLs. */
export const layerOver = Layer.effect(
  Adapters,
  Effect.gen(function*() {
    const urls = yield* providerUrls
    const http = yield* OutboundHttp
    return makeAdapters(allAdapters(http, urls))
  })
)

/** The adapters with their outbound client. */
export const layer = layerOver.pipe(Layer.provide(OutboundHttp.layer))
