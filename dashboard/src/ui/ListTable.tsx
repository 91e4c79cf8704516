/**
 * A list's table: its column heads, its rows, and the box it scrolls in on a narrow screen (the
 * page itself does not scroll sideways). The box can take the keyboard focus, so a keyboard user
 * can scroll it with the arrow keys, and is a region named after the table (its caption, hidden
 * but read), so a screen reader says what the stop is. A last column of row buttons (`actions`)
 * has a heading only a screen reader reads.
 */
import type { ComponentChildren } from "preact"

export const ListTable = ({
  label,
  columns,
  actions = false,
  children
}: {
  readonly label: string
  readonly columns: ReadonlyArray<string>
  readonly actions?: boolean
  readonly children: ComponentChildren
}) => (
  <div class="table-scroll" role="region" aria-label={label} tabIndex={0}>
    <table>
      <caption class="visually-hidden">{label}</caption>
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column} scope="col">
              {column}
            </th>
          ))}
          {actions ? (
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          ) : null}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  </div>
)
