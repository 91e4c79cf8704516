/**
 * The github toolkit: issue creation through the REST API, and a polling trigger over the
 * repository issues list (conditional requests with `since` and ETag). Owner and repository
 * names are constrained to GitHub's own alphabets so that they can never alter the request path.
 */
import { Predicate, Schema } from "effect"
import {
  FILTER_LIST_MAX,
  FILTER_TEXT_MAX,
  FilterText,
  type ToolDefinition,
  type ToolkitManifest,
  type TriggerDefinition
} from "./Catalog.ts"

const OWNER_PATTERN = "^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$"
// `.` and `..` are valid by the alphabet but would be collapsed as path segments.
const REPO_PATTERN = "^(?!\\.\\.?$)[A-Za-z0-9._-]{1,100}$"
export const MAX_TITLE_CODE_POINTS = 256
export const MAX_BODY_CODE_POINTS = 65_536

const Owner = Schema.String.check(Schema.isPattern(new RegExp(OWNER_PATTERN), { expected: "a GitHub user or organization name" }))
const Repo = Schema.String.check(Schema.isPattern(new RegExp(REPO_PATTERN), { expected: "a GitHub repository name" }))

export const CreateIssueInput = Schema.Struct({
  owner: Owner,
  repo: Repo,
  title: Schema.String.check(Schema.isMinLength(1), Schema.isMaxCodePoints(MAX_TITLE_CODE_POINTS)),
  body: Schema.optionalKey(Schema.String.check(Schema.isMaxCodePoints(MAX_BODY_CODE_POINTS)))
})
export type CreateIssueInput = typeof CreateIssueInput.Type

const ownerSchema = { type: "string", pattern: OWNER_PATTERN, description: "Repository owner (user or organization)." }
const repoSchema = { type: "string", pattern: REPO_PATTERN, description: "Repository name." }

export const createIssue: ToolDefinition = {
  name: "github.create_issue",
  toolkit: "github",
  description: "Opens an issue in a GitHub repository.",
  capability: "issues",
  version: "1.0.0",
  input: CreateIssueInput,
  inputSchema: {
    type: "object",
    properties: {
      owner: ownerSchema,
      repo: repoSchema,
      title: { type: "string", minLength: 1, maxLength: MAX_TITLE_CODE_POINTS },
      body: { type: "string", maxLength: MAX_BODY_CODE_POINTS, description: "Markdown body." }
    },
    required: ["owner", "repo", "title"],
    additionalProperties: false
  },
  outputSchema: {
    type: "object",
    properties: {
      number: { type: "integer", minimum: 1, description: "The issue number in its repository." },
      url: { type: "string", description: "The issue's web page (html_url)." },
      id: { type: "integer", description: "GitHub's global issue id." }
    },
    required: ["number", "url", "id"],
    additionalProperties: false
  },
  scopes: ["issues:write"],
  asyncByNature: false,
  pure: false,
  timeoutMs: 30_000,
  annotations: { title: "Create a GitHub issue", readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true }
}

export const IssueFilters = Schema.Struct({
  owner: Owner,
  repo: Repo,
  labels: Schema.optionalKey(Schema.Array(FilterText.check(Schema.isMinLength(1))).check(Schema.isMaxLength(FILTER_LIST_MAX)))
})
export type IssueFilters = typeof IssueFilters.Type

const issueFiltersSchema = {
  type: "object",
  properties: {
    owner: ownerSchema,
    repo: repoSchema,
    labels: {
      type: "array",
      items: { type: "string", minLength: 1, maxLength: FILTER_TEXT_MAX },
      maxItems: FILTER_LIST_MAX,
      description: "Only issues carrying every one of these labels."
    }
  },
  required: ["owner", "repo"],
  additionalProperties: false
}

/** The normalized payload of `github.issue_opened`. */
export interface IssueOpened {
  readonly owner: string
  readonly repo: string
  readonly id: number
  readonly number: number
  readonly title: string
  readonly url: string
  readonly user: string
  readonly labels: ReadonlyArray<string>
  readonly createdAt: string
}

export const issueOpened: TriggerDefinition = {
  name: "github.issue_opened",
  toolkit: "github",
  capability: "issues",
  description: "An issue opened in a repository, found by polling its issues list (pull requests excluded).",
  payloadSchema: {
    type: "object",
    properties: {
      owner: { type: "string" },
      repo: { type: "string" },
      id: { type: "integer" },
      number: { type: "integer" },
      title: { type: "string" },
      url: { type: "string" },
      user: { type: "string", description: "Login of the issue's author." },
      labels: { type: "array", items: { type: "string" } },
      createdAt: { type: "string", description: "ISO 8601." }
    },
    required: ["owner", "repo", "id", "number", "title", "url", "user", "labels", "createdAt"],
    additionalProperties: false
  },
  annotations: { title: "GitHub issue opened", filtersSchema: issueFiltersSchema },
  version: "1.0.0",
  deliveryMode: "polling",
  scopes: ["issues:read"],
  filters: IssueFilters
}

const labelName = (label: unknown): string | undefined =>
  Predicate.isString(label)
    ? label
    : Predicate.hasProperty(label, "name") && Predicate.isString(label.name)
    ? label.name
    : undefined

/** The payload for one element of the REST issues list, or undefined for pull requests and odd shapes. */
export const normalizeIssue = (owner: string, repo: string, issue: unknown): IssueOpened | undefined => {
  if (!Predicate.isObject(issue) || Predicate.hasProperty(issue, "pull_request")) return undefined
  const { id, number, title, html_url, user, labels, created_at } = issue as { readonly [key: string]: unknown }
  if (!Predicate.isNumber(id) || !Predicate.isNumber(number) || !Predicate.isString(title)) return undefined
  if (!Predicate.isString(html_url) || !Predicate.isString(created_at)) return undefined
  const login = Predicate.hasProperty(user, "login") && Predicate.isString(user.login) ? user.login : ""
  const names = Array.isArray(labels) ? labels.map(labelName).filter(Predicate.isString) : []
  return { owner, repo, id, number, title, url: html_url, user: login, labels: names, createdAt: created_at }
}

/** Owner, repo and labels compare case-insensitively, as GitHub treats their names. */
export const matchesIssueFilters = (payload: IssueOpened, filters: IssueFilters): boolean => {
  if (payload.owner.toLowerCase() !== filters.owner.toLowerCase() || payload.repo.toLowerCase() !== filters.repo.toLowerCase()) return false
  const labels = new Set(payload.labels.map((label) => label.toLowerCase()))
  return (filters.labels ?? []).every((label) => labels.has(label.toLowerCase()))
}

export const manifest: ToolkitManifest = {
  name: "github",
  version: "1.0.0",
  description: "GitHub issues through a personal access token, fine-grained token or app token.",
  authClasses: ["bearer", "api_key"],
  limits: {},
  tools: [createIssue],
  triggers: [issueOpened]
}
