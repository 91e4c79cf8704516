const pad = (n: number) => String(n).padStart(2, "0")

/**
 * The zone a moment is shown in: `UTC` when the browser's time is UTC then, else its offset from
 * UTC at that moment (`UTC+05:30`, `UTC-03:30`; summer time included).
 */
export const zoneOf = (date: Date): string => {
  const offset = -date.getTimezoneOffset()
  if (offset === 0) return "UTC"
  const minutes = Math.abs(offset)
  return `UTC${offset > 0 ? "+" : "-"}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`
}

/** A time from the API: the local rendering for people, with its zone; the ISO value for machines and titles. */
export const formatTime = (iso: string): string => {
  const date = new Date(iso)
  return Number.isNaN(date.getTime())
    ? iso
    : `${date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" })} ${zoneOf(date)}`
}

/**
 * `formatTime`'s text as its date and its time of day (with the zone), each kept on one line
 * (`.nowrap`): a narrow column breaks a time between them, or not at all, never into a word a line.
 * The text is the same; where the time of day cannot be found in it, it is left whole.
 */
const parts = (iso: string, text: string): { readonly date: string; readonly gap: string; readonly clock: string } | undefined => {
  const date = new Date(iso)
  if (Number.isNaN(date.getTime())) return undefined
  const at = text.lastIndexOf(date.toLocaleTimeString(undefined, { timeStyle: "medium" }))
  const before = /^(.*?)(\s*)$/su.exec(text.slice(0, Math.max(at, 0)))
  if (at <= 0 || before === null || before[1] === "" || before[2] === "") return undefined
  return { date: before[1] ?? "", gap: before[2] ?? "", clock: text.slice(at) }
}

export const Time = ({ iso }: { readonly iso: string | undefined }) => {
  if (iso === undefined) return <span class="muted">—</span>
  const text = formatTime(iso)
  const split = parts(iso, text)
  return (
    <time dateTime={iso} title={iso}>
      {split === undefined ? text : <><span class="nowrap">{split.date}</span>{split.gap}<span class="nowrap">{split.clock}</span></>}
    </time>
  )
}
