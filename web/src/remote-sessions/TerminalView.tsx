// xterm.js in a page: fitted to its box (ResizeObserver + the fit addon, every change sent to
// the device as the new window size), 5,000 lines of scrollback, copy and paste (the buttons,
// or Ctrl+Shift+C / Ctrl+Shift+V, since Ctrl+C belongs to the shell). Loaded only with the
// Terminal tab and the recording player, never in the main bundle.
import { forwardRef, useEffect, useImperativeHandle, useRef } from "react";
import { Terminal } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import "@xterm/xterm/css/xterm.css";
import "./remote-sessions.css";

export interface TerminalViewHandle {
  terminal: Terminal | null;
  fit(): void;
  focus(): void;
  copySelection(): Promise<boolean>;
  paste(): Promise<void>;
}

export const TerminalView = forwardRef<TerminalViewHandle, {
  label: string;
  /** a recording's player: no input, fixed size */
  readOnly?: boolean;
  cols?: number;
  rows?: number;
  onData?: (data: string) => void;
  onResize?: (cols: number, rows: number) => void;
}>(function TerminalView({ label, readOnly, cols, rows, onData, onResize }, ref) {
  const box = useRef<HTMLDivElement>(null);
  const term = useRef<Terminal | null>(null);
  const fit = useRef<FitAddon | null>(null);
  const handlers = useRef({ onData, onResize });
  handlers.current = { onData, onResize };

  useEffect(() => {
    const terminal = new Terminal({
      scrollback: 5000,
      cursorBlink: !readOnly,
      disableStdin: !!readOnly,
      cols: cols ?? 80,
      rows: rows ?? 24,
      fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
      fontSize: 13,
      theme: { background: "#0f1419", foreground: "#e6e1cf" },
    });
    const fitAddon = new FitAddon();
    terminal.loadAddon(fitAddon);
    terminal.open(box.current!);
    term.current = terminal;
    fit.current = fitAddon;
    const copy = () => {
      const text = terminal.getSelection();
      if (text) void navigator.clipboard?.writeText(text);
    };
    terminal.attachCustomKeyEventHandler((e) => {
      if (e.type !== "keydown" || !e.ctrlKey || !e.shiftKey) return true;
      if (e.code === "KeyC") {
        copy();
        return false;
      }
      if (e.code === "KeyV") {
        void navigator.clipboard?.readText().then((text) => terminal.paste(text));
        return false;
      }
      return true;
    });
    const data = terminal.onData((d) => handlers.current.onData?.(d));
    const resized = terminal.onResize(({ cols: c, rows: r }) => handlers.current.onResize?.(c, r));
    let observer: ResizeObserver | null = null;
    if (!readOnly) {
      // the window, a sidebar folding, the tab's box: any change of size refits the terminal
      observer = new ResizeObserver(() => {
        try {
          fitAddon.fit();
        } catch {
          /* not laid out (hidden) */
        }
      });
      observer.observe(box.current!);
      fitAddon.fit();
    }
    return () => {
      observer?.disconnect();
      data.dispose();
      resized.dispose();
      terminal.dispose();
      term.current = null;
    };
    // the terminal is made once; its size and mode are fixed for its life
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useImperativeHandle(ref, () => ({
    get terminal() {
      return term.current;
    },
    fit: () => fit.current?.fit(),
    focus: () => term.current?.focus(),
    copySelection: async () => {
      const text = term.current?.getSelection() ?? "";
      if (!text) return false;
      await navigator.clipboard.writeText(text);
      return true;
    },
    paste: async () => {
      const text = await navigator.clipboard.readText();
      term.current?.paste(text);
      term.current?.focus();
    },
  }), []);

  return <div ref={box} className={readOnly ? "terminal-box terminal-box--player" : "terminal-box"} role="region" aria-label={label} />;
});
