// The probe debug-mcp installs in the debuggee before its first line runs (by Runtime.evaluate
// while Node waits for the debugger). It hangs a `hit` function on the binding that
// Runtime.addBinding created. A breakpoint's condition calls
//   BINDING.hit(conditionThunk | null, () => (EXPRESSION))
// in the paused frame's scope; `hit` evaluates the expression, reports {type, value} as JSON
// through the binding (a Runtime.bindingCalled event, in order) and returns false, so the
// program never stops unless a stack was asked for (docs/performance.md).
//
// The built-ins a program is most likely to replace or monkey-patch (JSON.stringify,
// Object.keys, the Map and Set iterators, toString methods) are captured here, before the
// program runs, so it cannot change what is reported.
(function install(bindingName, options) {
  'use strict';
  const report = globalThis[bindingName];
  const stringify = JSON.stringify;
  const isArray = Array.isArray;
  const isView = ArrayBuffer.isView;
  const keys = Object.keys;
  const is = Object.is;
  const apply = Reflect.apply;
  const objectToString = Object.prototype.toString;
  const functionToString = Function.prototype.toString;
  const symbolToString = Symbol.prototype.toString;
  const bigintToString = BigInt.prototype.toString;
  const mapEntries = Map.prototype.entries;
  const mapSize = Object.getOwnPropertyDescriptor(Map.prototype, 'size').get;
  const setValues = Set.prototype.values;
  const setSize = Object.getOwnPropertyDescriptor(Set.prototype, 'size').get;
  const regexpToString = RegExp.prototype.toString;
  const toWellFormed = String.prototype.toWellFormed;
  const slice = String.prototype.slice;
  const MapCtor = Map, SetCtor = Set, ErrorCtor = Error, RegExpCtor = RegExp, DataViewCtor = DataView;
  const maxChars = options.maxChars;
  const maxDepth = options.maxDepth;
  let hits = 0;

  // A string, made well-formed (a lone surrogate would make the protocol JSON unreadable) and
  // cut to what is left of the budget.
  function text(s, budget) {
    if (toWellFormed !== undefined) s = apply(toWellFormed, s, []);
    if (s.length > budget.left) {
      const total = s.length;
      s = apply(slice, s, [0, Math.max(budget.left, 0)]) + '… [truncated: ' + total + ' chars]';
      budget.truncated = true;
    }
    budget.left -= s.length + 2;
    return s;
  }

  function describeFunction(f) {
    let source = '';
    try { source = apply(functionToString, f, []); } catch (_) { /* a revoked proxy */ }
    const name = typeof f.name === 'string' && f.name !== '' ? f.name : '(anonymous)';
    if (/^class\b/.test(source)) return '[class ' + name + ']';
    return '[Function: ' + name + ']';
  }

  function errorText(e) {
    try {
      if (e instanceof ErrorCtor || (e !== null && typeof e === 'object' && 'message' in e)) {
        const name = e.name === undefined ? 'Error' : String(e.name);
        return name + ': ' + String(e.message);
      }
      return 'Uncaught ' + stringify(convert(e, 0, [], { left: 1000, truncated: false }));
    } catch (_) {
      return 'Uncaught exception';
    }
  }

  // Any value to one JSON can hold. Numbers JSON cannot hold, BigInts, symbols, functions and
  // cycles become descriptive strings; the rest keeps its shape, within the character budget.
  function convert(v, depth, seen, budget) {
    switch (typeof v) {
      case 'undefined': budget.left -= 4; return null;
      case 'boolean': budget.left -= 5; return v;
      case 'number':
        budget.left -= 8;
        if (v !== v || v === Infinity || v === -Infinity) return String(v);
        return is(v, -0) ? '-0' : v;
      case 'bigint': return text(apply(bigintToString, v, []) + 'n', budget);
      case 'string': return text(v, budget);
      case 'symbol': return text(apply(symbolToString, v, []), budget);
      case 'function': return text(describeFunction(v), budget);
    }
    if (v === null) { budget.left -= 4; return null; }
    if (seen.includes(v)) return '[Circular]';
    if (depth >= maxDepth) return isArray(v) ? '[Array]' : '[Object]';
    seen.push(v);
    try {
      return convertObject(v, depth, seen, budget);
    } finally {
      seen.pop();
    }
  }

  function convertObject(v, depth, seen, budget) {
    if (v instanceof ErrorCtor) return text(errorText(v), budget);
    if (v instanceof RegExpCtor) return text(apply(regexpToString, v, []), budget);
    if (v instanceof MapCtor) {
      const parts = [];
      for (const [k, x] of apply(mapEntries, v, [])) {
        if (budget.left <= 0) { parts.push('…'); budget.truncated = true; break; }
        parts.push(stringify(convert(k, depth + 1, seen, budget)) + ' => ' +
                   stringify(convert(x, depth + 1, seen, budget)));
      }
      return 'Map(' + apply(mapSize, v, []) + ') {' + parts.join(', ') + '}';
    }
    if (v instanceof SetCtor) {
      const parts = [];
      for (const x of apply(setValues, v, [])) {
        if (budget.left <= 0) { parts.push('…'); budget.truncated = true; break; }
        parts.push(stringify(convert(x, depth + 1, seen, budget)));
      }
      return 'Set(' + apply(setSize, v, []) + ') {' + parts.join(', ') + '}';
    }
    if (typeof v.toJSON === 'function') {
      return convert(v.toJSON(''), depth, seen, budget);
    }
    if (isArray(v) || (isView(v) && !(v instanceof DataViewCtor))) {
      const out = [];
      const length = v.length;
      budget.left -= 2;
      for (let i = 0; i < length; i++) {
        if (budget.left <= 0) {
          out.push('… [truncated: ' + (length - i) + ' more items]');
          budget.truncated = true;
          break;
        }
        out.push(convert(v[i], depth + 1, seen, budget));
      }
      return out;
    }
    const tag = apply(objectToString, v, []);
    if (tag === '[object Promise]' || tag === '[object WeakMap]' || tag === '[object WeakSet]') {
      return tag;
    }
    const out = {};
    const names = keys(v);
    budget.left -= 2;
    for (let i = 0; i < names.length; i++) {
      if (budget.left <= 0) {
        out['…'] = '[truncated: ' + (names.length - i) + ' more properties]';
        budget.truncated = true;
        break;
      }
      const name = names[i];
      let x;
      try {
        x = v[name];
      } catch (e) {
        x = '[Thrown: ' + errorText(e) + ']';
      }
      // JSON.stringify leaves out properties whose value is undefined; so do we.
      if (x === undefined) continue;
      out[text(name, budget)] = convert(x, depth + 1, seen, budget);
    }
    return out;
  }

  function encode(v, limit) {
    const budget = { left: limit === undefined ? maxChars : limit, truncated: false };
    let value;
    try {
      value = convert(v, 0, [], budget);
    } catch (e) {
      value = '[not serialisable: ' + errorText(e) + ']';
    }
    return { message: { type: typeof v, value: value }, truncated: budget.truncated };
  }

  // `by`: 'd' from the breakpoint set by the file's own URL, which the collector drops once it
  // finds the file was transformed while loading (its lines are not the file's).
  function hit(condition, thunk, by) {
    if (!counts(condition)) return false;
    // `T` or `F` says whether the value was cut, then the JSON of {type, value}.
    report((by || '') + evaluate(thunk));
    return options.pause;
  }

  // Whether a hit counts: its condition holds (one that throws does not), within maxHits.
  function counts(condition) {
    if (condition !== null) {
      try {
        if (!condition()) return false;
      } catch (_) {
        return false;
      }
    }
    if (hits >= options.maxHits) return false;
    hits++;
    return true;
  }

  // For debug-evaluate: the same {type, value} as a hit, within `limit` characters, as `T`
  // or `F` (was it cut?) and JSON text.
  function evaluate(thunk, limit) {
    let encoded;
    try {
      encoded = encode(thunk(), limit);
    } catch (e) {
      encoded = { message: { type: 'error', value: errorText(e) }, truncated: false };
    }
    return (encoded.truncated ? 'T' : 'F') + stringify(encoded.message);
  }

  // For logpoints: report `L` + {id, text} and never stop.
  function log(id, thunk) {
    let text;
    try {
      text = String(thunk());
    } catch (e) {
      text = errorText(e);
    }
    if (toWellFormed !== undefined) text = apply(toWellFormed, text, []);
    report('L' + stringify({ id: id, text: text.length > maxChars ? apply(slice, text, [0, maxChars]) + '… [truncated]' : text }));
    return false;
  }

  // For logpoints: one `{expression}` of the message as text. An error becomes
  // `<ReferenceError: x is not defined>` in its place, not the whole message.
  function part(thunk) {
    try {
      const v = thunk();
      if (typeof v === 'string') return v;
      if (typeof v === 'function') return describeFunction(v);
      if (v === null || typeof v !== 'object') return String(v);
      return stringify(convert(v, 0, [], { left: 1000, truncated: false }));
    } catch (e) {
      return '<' + errorText(e) + '>';
    }
  }

  // For `probes`: probe `index` reached its line. With an expression, its value is reported
  // (`P<index>:` then as a hit's); without one, the breakpoint stops, and the collector reads
  // the frame's locals.
  function probe(index, condition, thunk, by) {
    if (!counts(condition)) return false;
    if (thunk === null) return true;
    report('P' + (by || '') + index + ':' + evaluate(thunk));
    return false;
  }

  // A value as one short line (at most `PREVIEW` characters): a string quoted, an object as
  // JSON cut short.
  const PREVIEW = 100;
  function short(v) {
    let t;
    try {
      if (typeof v === 'string') t = stringify(v.length > PREVIEW ? apply(slice, v, [0, PREVIEW + 1]) : v);
      else if (typeof v === 'function') t = describeFunction(v);
      else if (v === undefined) t = 'undefined';
      else if (v === null || typeof v !== 'object') t = String(v);
      else t = stringify(convert(v, 0, [], { left: PREVIEW, truncated: false }));
    } catch (e) {
      t = '<' + errorText(e) + '>';
    }
    return t.length > PREVIEW ? apply(slice, t, [0, PREVIEW]) + '…' : t;
  }

  // For `calls` set as breakpoints: traced function `index` started, with these arguments
  // (its parameters' values at its first statement): reported as `C<index>:` and their
  // previews.
  function call(index, values) {
    const shown = [];
    for (let i = 0; i < values.length; i++) shown.push(short(values[i]));
    report('C' + index + ':' + stringify(shown));
    return false;
  }

  Object.defineProperty(report, 'hit', { value: hit });

  // An exception (or any value thrown) as {type, message}.
  function failed(e) {
    const type = e !== null && typeof e === 'object' && typeof e.name === 'string' ? e.name : typeof e;
    const message = e !== null && typeof e === 'object' && e.message !== undefined ? String(e.message) : short(e);
    return { type: type, message: apply(slice, message, [0, 200]) };
  }

  // For `calls`: an async function's call `n` returned its promise; what it settles to is
  // reported (`R<n>:` a preview, `X<n>:` {type, message}). A rejection still goes on to be
  // unhandled (or handled) as the program would have it.
  function settle(n, promise) {
    promise.then(
      (v) => { report('R' + n + ':' + stringify(short(v))); },
      (e) => {
        report('X' + n + ':' + stringify(failed(e)));
        throw e;
      });
  }

  // For `calls` compiled into a script (cdp/instrument.rs): a traced function's code runs
  // between `const __dmc__ = BINDING.e(index, [parameters])` and `__dmc__.f()` (in a
  // `finally`), and each of its returns sets `__dmc__.v`. Reported: `c<index>:<n>:<parent>:`
  // and the arguments' previews when call n starts (its parent: the traced call it runs in,
  // or 0), `r<n>:` a preview when it returned (an async function: what it resolved to),
  // `x<n>:` {type, message} when an exception left it (its `catch` called `x`) or its promise
  // was rejected, `u<n>` when one left an arrow's expression (seen from the stack later),
  // `t<n>` when it left without returning otherwise (compiled without `catch`,
  // under `failures`: the run knows the exception from its pause), `o<index>` for a call past
  // the cap (only counted).
  const traced = [];
  const running = [];
  let started = 0;
  let counting = false;
  const PromiseCtor = Promise;
  const promiseThen = Promise.prototype.then;
  const captureStackTrace = ErrorCtor.captureStackTrace;
  function Call(index, n) {
    this.index = index;
    this.n = n;
    this.done = false;
    this.value = undefined;
  }
  // An arrow's expression is compiled as `BINDING.e(…).v = EXPRESSION`: setting `v` ends it.
  Object.defineProperty(Call.prototype, 'v', {
    set(x) {
      this.done = true;
      this.value = x;
      if (traced[this.index].concise) left(this);
    },
  });
  Object.defineProperty(Call.prototype, 'f', { value: function () { left(this); } });
  // An exception leaves this call: the arrows' expressions it goes on through (no `catch` of
  // their own) are told it too.
  Object.defineProperty(Call.prototype, 'x', {
    value: function (e) {
      this.threw = failed(e);
      for (let i = running.length - 1; i >= 0; i--) {
        if (running[i] === this) continue;
        if (!traced[running[i].index].concise) break;
        running[i].passing = this.threw;
      }
    },
  });
  const COUNTED = { set v(_) {}, f() {}, x(_) {} };

  function enter(index, values) {
    if (counting) {
      report('o' + index);
      return COUNTED;
    }
    const parent = innermost();
    const n = ++started;
    const shown = [];
    for (let i = 0; i < values.length; i++) shown.push(short(values[i]));
    report('c' + index + ':' + n + ':' + (parent === undefined ? 0 : parent.n) + ':' + stringify(shown));
    const call = new Call(index, n);
    running.push(call);
    return call;
  }

  function left(call) {
    for (let i = running.length - 1; i >= 0; i--) {
      if (running[i] === call) {
        running.splice(i, 1);
        break;
      }
    }
    if (!call.done) {
      report(call.threw === undefined ? 't' + call.n : 'x' + call.n + ':' + stringify(call.threw));
      return;
    }
    const v = call.value;
    if (traced[call.index].kind === 1 && v instanceof PromiseCtor) {
      apply(promiseThen, v, [
        (x) => { report('r' + call.n + ':' + stringify(short(x))); },
        (e) => { report('x' + call.n + ':' + stringify(failed(e))); }]);
      return;
    }
    report('r' + call.n + ':' + stringify(short(v)));
  }

  // The innermost traced call still running: an async function's or a generator's leaves
  // the stack at an `await` or a `yield`, and an arrow's expression (no `finally`) by an
  // exception, which only the stack tells (`u<n>`: left so, the exception unknown).
  function innermost() {
    while (running.length > 0) {
      const top = running[running.length - 1];
      const t = traced[top.index];
      if ((t.kind === 0 && !t.concise) || onStack(top)) return top;
      running.pop();
      if (t.concise && t.kind === 0) {
        report(top.passing === undefined ? 'u' + top.n : 'x' + top.n + ':' + stringify(top.passing));
      }
    }
    return undefined;
  }

  function onStack(call) {
    const t = traced[call.index];
    const all = sites();
    for (let i = 0; i < all.length; i++) {
      const name = all[i].getFileName();
      if (name !== t.url && 'file://' + name !== t.url) continue;
      const line = all[i].getLineNumber() - 1, column = all[i].getColumnNumber() - 1;
      const inside = (r) => (line > r[0] || (line === r[0] && column >= r[1])) &&
        (line < r[2] || (line === r[2] && column <= r[3]));
      if (inside(t.span) && !t.inner.some(inside)) return true;
    }
    return false;
  }

  // The stack's call sites (V8's structured stack trace), the program's own formatting left
  // as it was.
  function sites() {
    const prepare = ErrorCtor.prepareStackTrace, limit = ErrorCtor.stackTraceLimit;
    try {
      ErrorCtor.prepareStackTrace = (_, s) => s;
      ErrorCtor.stackTraceLimit = 200;
      const holder = {};
      captureStackTrace(holder, sites);
      return isArray(holder.stack) ? holder.stack : [];
    } catch (_) {
      return [];
    } finally {
      ErrorCtor.prepareStackTrace = prepare;
      ErrorCtor.stackTraceLimit = limit;
    }
  }

  // The functions of a script about to run compiled: [index, kind (0, 1 async, 2 a
  // generator), whether it is an arrow's expression, the script's URL, its span and those of
  // the functions inside it (each [line, column, line, column], 0-based)].
  function trace(entries) {
    for (let i = 0; i < entries.length; i++) {
      const [index, kind, concise, url, span, inner] = entries[i];
      traced[index] = { kind: kind, concise: concise, url: url, span: span, inner: inner };
    }
    return true;
  }

  Object.defineProperty(report, 'e', { value: enter });
  Object.defineProperty(report, 'trace', { value: trace });
  Object.defineProperty(report, 'count', { value: () => { counting = true; } });
  Object.defineProperty(report, 'call', { value: call });
  Object.defineProperty(report, 'settle', { value: settle });
  Object.defineProperty(report, 'short', { value: short });
  Object.defineProperty(report, 'probe', { value: probe });
  Object.defineProperty(report, 'part', { value: part });
  Object.defineProperty(report, 'log', { value: log });
  Object.defineProperty(report, 'evaluate', { value: evaluate });
  return true;
})
