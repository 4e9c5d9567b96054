// WebSocket client of one run or design group: reconnects with backoff and resumes from the
// "state" message the server sends first on every (re)connect. Messages are JSON objects whose
// `type` selects the handler: state, progress, partial, status.

const TERMINAL = new Set(["succeeded", "infeasible", "failed", "cancelled"]);

export function isTerminal(status) {
  return TERMINAL.has(status);
}

export class LiveSocket {
  /**
   * @param {string} path      the socket's path, from the page (data-live-url, {% live_url %})
   * @param {object} handlers  {state(msg), progress(msg), partial(msg), status(msg), open(), close(info)}
   * @param {object} options   {stopWhen(msg) -> bool: stop reconnecting after this message}
   */
  constructor(path, handlers, options = {}) {
    this.url = `${window.location.protocol === "https:" ? "wss" : "ws"}://${window.location.host}${path}`;
    this.handlers = handlers;
    this.options = options;
    this.retryMs = 500;
    this.stopped = false;
    this.socket = null;
    // Counters and the last message of each type, read by the e2e test and the bench.
    this.stats = { opened: 0, received: 0, byType: {}, last: {} };
  }

  connect() {
    this.stopped = false;
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.addEventListener("open", () => {
      this.retryMs = 500;
      this.stats.opened += 1;
      this.handlers.open?.();
    });
    socket.addEventListener("message", (event) => this.receive(event.data));
    socket.addEventListener("close", (event) => {
      if (this.socket !== socket) return;
      this.handlers.close?.({ code: event.code, willRetry: !this.stopped && event.code < 4000 });
      // 4xxx codes are the server refusing us (e.g. 4403 forbidden): retrying will not help.
      if (this.stopped || event.code >= 4000) return;
      setTimeout(() => this.stopped || this.connect(), this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, 10000);
    });
    return this;
  }

  /** Dispatch one raw message (also used by the bench to inject messages). */
  receive(raw) {
    let msg;
    try {
      msg = typeof raw === "string" ? JSON.parse(raw) : raw;
    } catch {
      return;
    }
    const type = msg.type;
    this.stats.received += 1;
    this.stats.byType[type] = (this.stats.byType[type] || 0) + 1;
    this.stats.last[type] = msg;
    this.handlers[type]?.(msg);
    if (this.options.stopWhen?.(msg)) this.close();
  }

  close() {
    this.stopped = true;
    if (this.socket && this.socket.readyState <= 1) this.socket.close(1000);
  }
}
