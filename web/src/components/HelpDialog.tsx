import { useEffect, useRef } from 'react';

const SHORTCUTS: { keys: string[]; what: string }[] = [
  { keys: ['j'], what: 'Next item' },
  { keys: ['k'], what: 'Previous item' },
  { keys: ['Enter'], what: 'Open the focused item' },
  { keys: ['a'], what: 'Approve (asks you to confirm)' },
  { keys: ['r'], what: 'Reject (asks you to confirm)' },
  { keys: ['p'], what: 'Accept the first repair (asks you to confirm)' },
  { keys: ['x'], what: 'Close an ambiguous item (asks you to confirm)' },
  { keys: ['u'], what: 'Back to the inbox' },
  { keys: ['/'], what: 'Search Done or Closed' },
  { keys: ['g', 'i'], what: 'Go to the inbox' },
  { keys: ['g', 'd'], what: 'Go to Done' },
  { keys: ['g', 'c'], what: 'Go to Closed' },
  { keys: ['Esc'], what: 'Cancel; close this help' },
  { keys: ['?'], what: 'This help' },
];

/** The keyboard shortcuts, in a modal dialog (Esc closes it). */
export function HelpDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      dialog.showModal();
      dialog.querySelector<HTMLElement>('[data-autofocus]')?.focus();
    }
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog ref={ref} className="dialog help-dialog" aria-labelledby="help-title" onClose={onClose}>
      <div className="dialog-body">
        <h2 id="help-title">Keyboard shortcuts</h2>
        <p className="muted">
          In the inbox, <kbd>a</kbd> and <kbd>r</kbd> act on the focused item. Every action is also a button you can reach with Tab.
        </p>
        <table className="shortcut-table">
          <tbody>
            {SHORTCUTS.map((s) => (
              <tr key={s.keys.join('+')}>
                <th scope="row">
                  {s.keys.map((k, i) => (
                    <span key={k}>
                      {i > 0 && <span className="then"> then </span>}
                      <kbd>{k}</kbd>
                    </span>
                  ))}
                </th>
                <td>{s.what}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <div className="dialog-actions">
          <button type="button" className="button primary" onClick={onClose} data-autofocus>
            Got it
          </button>
        </div>
      </div>
    </dialog>
  );
}
