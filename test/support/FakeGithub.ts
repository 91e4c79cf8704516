/**
 * A local fake of GitHub's issues list for polling tests (SERVICE_GITHUB_API_URL points at it):
 * `GET /repos/:owner/:repo/issues` with `since` (updated at or after), `sort=created`,
 * `direction=asc`, `per_page` and `page`, a `Link` header for the next page, a strong ETag per
 * answer and 304 for a matching `If-None-Match`. Tests add issues (and pull requests), make it
 * fail for a while (429 with Retry-After, 500), and read every request it received.
 */
import { createHash } from "node:crypto"
import { createServer, type Server } from "node:http"

export interface FakeIssue {
  readonly id: number
  readonly number: number
  readonly title: string
  readonly created_at: string
  updated_at: string
  readonly labels: ReadonlyArray<{ readonly name: string }>
  readonly pull_request?: { readonly url: string }
}

export interface GithubRequest {
  readonly at: number
  readonly path: string
  readonly query: Readonly<Record<string, string>>
  readonly headers: Readonly<Record<string, string>>
  status: number
}

export interface FakeGithub {
  readonly url: string
  readonly requests: Array<GithubRequest>
  /** Every issue and pull request added so far. */
  readonly issues: () => ReadonlyArray<FakeIssue>
  /** Adds an issue created now (or at `createdAt`); answers it. */
  readonly addIssue: (options?: { readonly title?: string; readonly labels?: ReadonlyArray<string>; readonly pullRequest?: boolean; readonly createdAt?: string }) => FakeIssue
  /** Marks the issue updated now, or at `at`. */
  readonly touch: (issue: FakeIssue, at?: string) => void
  /** The next answers, instead of the list (then the list again). */
  readonly failNext: (answers: ReadonlyArray<{ readonly status: number; readonly headers?: Readonly<Record<string, string>> }>) => void
  readonly close: () => Promise<void>
}

export const startFakeGithub = async (owner = "octo", repo = "hello"): Promise<FakeGithub> => {
  const issues: Array<FakeIssue> = []
  const requests: Array<GithubRequest> = []
  const failures: Array<{ readonly status: number; readonly headers?: Readonly<Record<string, string>> }> = []
  let nextId = 1000
  let url = ""
  const server: Server = createServer((req, res) => {
    const parsed = new URL(req.url ?? "/", "http://fake")
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers[name] = value
    const record: GithubRequest = { at: Date.now(), path: parsed.pathname, query: Object.fromEntries(parsed.searchParams), headers, status: 0 }
    requests.push(record)
    const answer = (status: number, body: string, extra: Record<string, string> = {}) => {
      record.status = status
      res.writeHead(status, { "content-type": "application/json", ...extra })
      res.end(body)
    }
    const failure = failures.shift()
    if (failure !== undefined) return answer(failure.status, JSON.stringify({ message: "failing on purpose" }), { ...failure.headers })
    if (parsed.pathname !== `/repos/${owner}/${repo}/issues`) return answer(404, JSON.stringify({ message: "Not Found" }))
    if (headers.authorization !== "Bearer gh-token") return answer(401, JSON.stringify({ message: "Bad credentials" }))
    const since = parsed.searchParams.get("since")
    const perPage = Number(parsed.searchParams.get("per_page") ?? 30)
    const page = Number(parsed.searchParams.get("page") ?? 1)
    const matching = issues
      .filter((issue) => since === null || Date.parse(issue.updated_at) >= Date.parse(since))
      .toSorted((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at) || a.id - b.id)
    const slice = matching.slice((page - 1) * perPage, page * perPage)
    const body = JSON.stringify(slice.map((issue) => ({
      ...issue,
      html_url: `https://github.com/${owner}/${repo}/issues/${issue.number}`,
      user: { login: "octocat" },
      state: "open"
    })))
    const etag = `"${createHash("sha256").update(body).digest("hex").slice(0, 20)}"`
    const more = matching.length > page * perPage
    const next = new URL(`${url}${parsed.pathname}`)
    for (const [key, value] of parsed.searchParams) next.searchParams.set(key, value)
    next.searchParams.set("page", String(page + 1))
    if (headers["if-none-match"] === etag) return answer(304, "", { etag })
    return answer(200, body, { etag, ...(more ? { link: `<${next.href}>; rel="next"` } : {}) })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("expected a TCP address")
  url = `http://127.0.0.1:${address.port}`
  return {
    url,
    requests,
    issues: () => issues,
    addIssue: (options = {}) => {
      const id = nextId++
      const now = options.createdAt ?? new Date().toISOString()
      const issue: FakeIssue = {
        id,
        number: id - 999,
        title: options.title ?? `issue ${id}`,
        created_at: now,
        updated_at: now,
        labels: (options.labels ?? []).map((name) => ({ name })),
        ...(options.pullRequest === true ? { pull_request: { url: `https://api.github.com/pulls/${id}` } } : {})
      }
      issues.push(issue)
      return issue
    },
    touch: (issue, at) => {
      issue.updated_at = at ?? new Date().toISOString()
    },
    failNext: (answers) => void failures.push(...answers),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
