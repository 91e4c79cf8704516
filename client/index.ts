/**
 * The service's client library. Import from here only: it depends on the HTTP contracts
 * (`http/api/*Api.ts`) and the domain, never on server code, so browsers and other services can
 * bundle it (published as `@service/client`, built by `npm run build:client`).
 *
 * - `ServiceClient` / `makeServiceClient`: Effect methods, failures typed as `ServiceError`.
 * - `createClient`: the same methods as Promises.
 * - `verifyWebhook`: checks a delivery's signature on the receiver's side.
 */
export { type Client, createClient } from "./PromiseClient.ts"
export * from "./Resources.ts"
export { type ClientOptions, makeServiceClient, ServiceClient, type ServiceClientShape } from "./ServiceClient.ts"
export { ServiceError, type ServiceErrorCode } from "./ServiceError.ts"
export type { Fetch, RetryWait } from "./Transport.ts"
export { type HeaderSource, TOLERANCE_SECONDS, verifyWebhook, type VerifyResult } from "./Webhooks.ts"
// The catalog is code: list toolkits, tools and triggers without a round trip.
export { catalogVersion, findTool, findToolkit, findTrigger, listTools, listTriggers, toolkits } from "../domain/catalog/index.ts"
