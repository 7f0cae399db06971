// SPDX-License-Identifier: Apache-2.0
import Gateway

/// The console's one stylesheet, served by the gateway at `/console/console.css`: no external
/// asset, no build step. System fonts (with the common Chinese ones named), readable tables.
enum ConsoleStyle {
    static let css = """
        :root { --ink: #1d2329; --muted: #5c6670; --line: #d9dee3; --paper: #ffffff; --wash: #f4f6f8;
          --accent: #07a35a; --warn: #b35c00; --warn-wash: #fff4e5; --bad: #b3261e; --bad-wash: #fdecea;
          --ok-wash: #e8f6ee; }
        * { box-sizing: border-box; }
        body { margin: 0; color: var(--ink); background: var(--wash);
          font: 15px/1.5 system-ui, -apple-system, "PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC",
            "WenQuanYi Zen Hei", sans-serif; }
        header { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: 8px;
          padding: 10px 24px; background: var(--ink); color: #fff; }
        header a { color: #fff; text-decoration: none; }
        header .brand { font-weight: 600; }
        header nav { display: flex; flex-wrap: wrap; align-items: center; gap: 16px; }
        header .who { color: #c9d1d9; }
        header button { background: transparent; color: #fff; border: 1px solid #8b949e; }
        main { max-width: 1200px; margin: 0 auto; padding: 16px 24px 32px; }
        h1 { font-size: 22px; margin: 8px 0 16px; word-break: break-all; }
        h2 { font-size: 17px; margin: 24px 0 8px; }
        h3 { font-size: 15px; margin: 0 0 8px; }
        footer { max-width: 1200px; margin: 0 auto; padding: 8px 24px 24px; color: var(--muted); font-size: 13px; }
        .card { background: var(--paper); border: 1px solid var(--line); border-radius: 6px; padding: 16px;
          margin: 0 0 16px; max-width: 720px; }
        form.card { display: grid; gap: 6px; }
        #login { max-width: 360px; }
        .filters { display: flex; flex-wrap: wrap; align-items: end; gap: 12px; }
        form.filters { display: flex; max-width: none; }
        label { color: var(--muted); font-size: 13px; }
        input, select, button { font: inherit; padding: 6px 10px; border: 1px solid var(--line); border-radius: 4px; }
        input { background: var(--paper); color: var(--ink); }
        button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
        form.inline { display: inline; margin: 0; }
        .hint { color: var(--muted); font-size: 13px; margin: 4px 0; }
        section { overflow-x: auto; }
        table { border-collapse: collapse; width: 100%; background: var(--paper); border: 1px solid var(--line); }
        th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { background: var(--wash); font-weight: 600; font-size: 13px; }
        td.amount { text-align: right; white-space: nowrap; }
        td.typed { white-space: pre-wrap; }
        .mono, code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 13px; }
        code { color: var(--muted); }
        dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; background: var(--paper);
          border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 0; }
        dt { color: var(--muted); }
        dd { margin: 0; word-break: break-all; }
        ol#timeline { background: var(--paper); border: 1px solid var(--line); border-radius: 6px; margin: 0;
          padding: 8px 16px 8px 40px; }
        ol#timeline li { padding: 3px 0; }
        ol#timeline time { color: var(--muted); white-space: nowrap; }
        ol#timeline .detail { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; }
        .state { font-weight: 600; white-space: nowrap; }
        .state-success, .state-refund { color: var(--accent); }
        .state-closed, .state-revoked, .state-payerror { color: var(--muted); }
        .warnings ul { margin: 0; padding: 12px 16px 12px 32px; background: var(--warn-wash); color: var(--warn);
          border: 1px solid #f0c48a; border-radius: 6px; }
        .notice { border-radius: 6px; padding: 10px 16px; margin: 0 0 16px; border: 1px solid var(--line);
          background: var(--paper); }
        .notice p { margin: 0; }
        .notice pre { margin: 6px 0 0; white-space: pre-wrap; }
        .notice.success { background: var(--ok-wash); border-color: #9fd8b8; }
        .notice.error { background: var(--bad-wash); border-color: #f0aaa5; color: var(--bad); }
        nav.pages { display: flex; gap: 16px; margin: 12px 0; }
        .state-refund.partial { color: var(--warn); }
        .flag { display: inline-block; padding: 0 6px; margin: 0 4px 2px 0; border-radius: 4px; background: var(--warn-wash);
          color: var(--warn); font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
        nav.filters { margin: 0 0 12px; }
        nav.filters a { padding: 2px 8px; border: 1px solid var(--line); border-radius: 4px; background: var(--paper);
          text-decoration: none; color: var(--ink); }
        nav.filters a.current { border-color: var(--accent); color: var(--accent); font-weight: 600; }
        """
}
