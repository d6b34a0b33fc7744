// The operator's page (a2a_flask, A2A_DASHBOARD). Reads this same URL as
// JSON every 5 s, with the key typed in (kept in this closure only) or, with
// none, the host's login session; posts its two actions beside it.
// dashboard.py puts this file in one closure, "use strict". Everything a
// caller or an agent wrote goes into the page as text (textContent); the
// chart is SVG made with createElementNS: no HTML sink (Trusted Types).
  var REFRESH_MS = 5000;
  var SVG = "http://www.w3.org/2000/svg";
  var key = "";
  var timer = null;
  var lease = 30;

  function $(id) { return document.getElementById(id); }

  function el(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (className) { node.className = className; }
    return node;
  }

  function clear(node) {
    while (node.firstChild) { node.removeChild(node.firstChild); }
  }

  function cell(row, text, className) {
    var td = el("td", text, className);
    row.appendChild(td);
    return td;
  }

  function seconds(value) {
    if (value === null || value === undefined) { return "-"; }
    if (value < 120) { return Math.round(value) + " s"; }
    if (value < 7200) { return Math.round(value / 60) + " min"; }
    return Math.round(value / 3600) + " h";
  }

  function bytes(n) {
    if (n === null || n === undefined) { return "-"; }
    if (n < 1024) { return n + " B"; }
    if (n < 1048576) { return (n / 1024).toFixed(1) + " KiB"; }
    return (n / 1048576).toFixed(1) + " MiB";
  }

  function showError(text) {
    $("error").textContent = text;
    $("error").hidden = false;
  }

  function hideError() {
    $("error").hidden = true;
    $("error").textContent = "";
  }

  function headers(extra) {
    // The page handles a 401 itself: no browser login dialog (dashboard.py).
    var h = {"Accept": "application/json", "X-Requested-With": "a2a-dashboard"};
    if (key) { h.Authorization = "Bearer " + key; }
    Object.keys(extra || {}).forEach(function (name) { h[name] = extra[name]; });
    return h;
  }

  function call(url, options) {
    options.credentials = key ? "omit" : "same-origin";
    return fetch(url, options).then(function (response) {
      return response.text().then(function (body) {
        var data = null;
        try { data = JSON.parse(body); } catch (ignored) { data = null; }
        if (!response.ok) {
          var message = data && data.message ? data.message : "the service answered " + response.status;
          var error = new Error("HTTP " + response.status + ": " + message);
          error.status = response.status;
          throw error;
        }
        return data;
      });
    });
  }

  // -- what is shown -------------------------------------------------------------

  function chart(counts) {
    var svg = document.createElementNS(SVG, "svg");
    var max = Math.max.apply(null, counts.concat([1]));
    svg.setAttribute("class", "chart");
    svg.setAttribute("viewBox", "0 0 120 40");
    svg.setAttribute("preserveAspectRatio", "none");
    var total = counts.reduce(function (a, b) { return a + b; }, 0);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", total + " turns in the last hour, at most " + max + " a minute");
    var base = document.createElementNS(SVG, "line");
    base.setAttribute("x1", "0"); base.setAttribute("x2", "120");
    base.setAttribute("y1", "39.5"); base.setAttribute("y2", "39.5");
    svg.appendChild(base);
    counts.forEach(function (count, i) {
      if (!count) { return; }
      var rect = document.createElementNS(SVG, "rect");
      var height = Math.max(1, 38 * count / max);
      rect.setAttribute("x", String(i * 2));
      rect.setAttribute("width", "1.6");
      rect.setAttribute("y", String(39 - height));
      rect.setAttribute("height", String(height));
      var title = document.createElementNS(SVG, "title");
      title.textContent = count + " turns, " + (59 - i) + " min ago";
      rect.appendChild(title);
      svg.appendChild(rect);
    });
    return svg;
  }

  function showAgents(agents) {
    var body = $("agents");
    clear(body);
    Object.keys(agents).sort().forEach(function (name) {
      var agent = agents[name];
      var row = el("tr");
      row.setAttribute("data-agent", name);
      cell(row, name + (agent.background ? " (background)" : ""));
      var states = cell(row, "");
      var names = Object.keys(agent.tasks).sort();
      if (!names.length) { states.appendChild(el("span", "no tasks", "muted")); }
      names.forEach(function (state) {
        var tag = el("span", state + " " + agent.tasks[state], "tag");
        tag.setAttribute("data-state", state);
        states.appendChild(tag);
      });
      var turns = cell(row, "");
      turns.appendChild(chart(agent.turns_per_minute));
      var total = agent.turns_per_minute.reduce(function (a, b) { return a + b; }, 0);
      turns.appendChild(el("span", total + " in the hour", "muted"));
      body.appendChild(row);
    });
  }

  function showQueue(queue) {
    $("queue-depth").textContent = String(queue.depth);
    $("queue-oldest").textContent = queue.depth ? "oldest waiting " + seconds(queue.oldest_seconds) : "";
    var body = $("queue");
    clear(body);
    // One row per tenant and caller ("" is no tenant's).
    var rows = [];
    Object.keys(queue.tenants).sort().forEach(function (tenant) {
      Object.keys(queue.tenants[tenant]).sort().forEach(function (caller) {
        rows.push([tenant, caller, queue.tenants[tenant][caller]]);
      });
    });
    $("queue-empty").hidden = rows.length > 0;
    $("queue-table").hidden = rows.length === 0;
    rows.forEach(function (item) {
      var row = el("tr");
      cell(row, item[0] || "-", "tenant");
      cell(row, item[1], "mono");
      cell(row, item[2], "num");
      var button = el("button", "Cancel its working tasks");
      button.type = "button";
      button.addEventListener("click", function () { cancelCaller(item[1]); });
      cell(row, "").appendChild(button);
      body.appendChild(row);
    });
  }

  function ago(value) {
    return value === null || value === undefined ? "-" : seconds(value) + " ago";
  }

  function showWorkers(data) {
    var workers = data.workers;
    var unseen = data.workers_unseen_seconds;
    var body = $("workers");
    clear(body);
    $("worker-count").textContent = String(workers.length);
    var note = $("worker-note");
    note.className = "muted";
    note.textContent = "";
    // Red as /health's "degraded": background agents exist and no claimer
    // was seen within twice the lease.
    if (unseen !== null && unseen !== undefined) {
      note.className = "bad";
      note.textContent = "none seen for " + unseen + " s";
    }
    if (!workers.length) {
      var row = el("tr");
      var td = cell(row, note.textContent || "none seen", note.textContent ? "bad" : "muted");
      td.colSpan = 5;
      body.appendChild(row);
    }
    workers.forEach(function (worker) {
      var row = el("tr");
      var late = worker.last_seen_seconds > 2 * lease;
      cell(row, worker.id + (worker.in_process ? " (in-process)" : ""), "mono");
      cell(row, worker.running, "num");
      cell(row, ago(worker.heartbeat_seconds), "num");
      cell(row, ago(worker.lease_renewed_seconds), "num");
      cell(row, late ? "none seen for " + Math.round(worker.last_seen_seconds) + " s"
        : ago(worker.last_seen_seconds), late ? "num bad" : "num");
      if (late && !note.textContent) { note.className = "bad"; note.textContent = "a worker is silent"; }
      body.appendChild(row);
    });
  }

  function taskLink(taskId, rowId) {
    var link = el("a", taskId, "mono");
    // Where the operator finds it all: its row here (rowId: "task-ID" in
    // the failures, "slow-ID" in the slowest turns), and the command.
    link.href = "#" + encodeURIComponent(rowId);
    link.title = "flask a2a tasks show " + taskId;
    return link;
  }

  function when(at) {
    return at.replace("T", " ").replace(/\.\d+Z$/, "Z");
  }

  function showSlowest(data) {
    var slowest = data.slowest;
    var body = $("slowest");
    clear(body);
    $("slowest-table").hidden = slowest.length === 0;
    $("slowest-note").textContent = slowest.length
      ? "Tasks of one turn, from their first message to their end (queue wait included), among the newest " + data.slowest_of + " that ended in the hour."
      : "No turn ended in the last hour.";
    var failed = {};
    data.failures.forEach(function (failure) { failed[failure.task_id] = true; });
    slowest.forEach(function (turn) {
      var row = el("tr");
      row.id = "slow-" + turn.task_id;
      cell(row, turn.seconds < 1 ? Math.round(turn.seconds * 1000) + " ms"
        : turn.seconds < 10 ? turn.seconds.toFixed(1) + " s" : seconds(turn.seconds), "num");
      cell(row, when(turn.at), "mono");
      cell(row, turn.agent);
      cell(row, turn.tenant || "-", "tenant");
      cell(row, turn.caller, "mono");
      // A failure listed links to its row, which says why; else to this one.
      cell(row, "").appendChild(taskLink(turn.task_id,
        (failed[turn.task_id] ? "task-" : "slow-") + turn.task_id));
      var state = el("span", turn.state, "tag");
      state.setAttribute("data-state", turn.state);
      cell(row, "").appendChild(state);
      body.appendChild(row);
    });
  }

  function showFailures(failures) {
    $("failure-count").textContent = String(failures.length);
    var body = $("failures");
    clear(body);
    $("failures-empty").hidden = failures.length > 0;
    $("failures-table").hidden = failures.length === 0;
    failures.forEach(function (failure) {
      var row = el("tr");
      row.id = "task-" + failure.task_id;
      cell(row, when(failure.at), "mono");
      cell(row, failure.agent);
      cell(row, failure.tenant || "-", "tenant");
      cell(row, failure.caller, "mono");
      cell(row, "").appendChild(taskLink(failure.task_id, row.id));
      cell(row, failure.text);
      body.appendChild(row);
    });
  }

  function showKeys(keys) {
    var body = $("keys");
    clear(body);
    keys.forEach(function (k) {
      var row = el("tr");
      cell(row, k.id + (k.operator ? " (operator)" : "") + (k.revoked_at ? " (revoked)" : ""), "mono");
      cell(row, k.label || "-");
      cell(row, k.tenant || "-", "tenant");
      cell(row, k.scope);
      cell(row, k.last_used_at || "never", "mono");
      body.appendChild(row);
    });
  }

  function showSettings(data) {
    var list = $("settings");
    clear(list);
    var storage = data.storage;
    $("storage-backend").textContent = storage.backend;
    $("storage-note").textContent = storage.backend === "sqlite"
      ? bytes(storage.file_bytes) + ", WAL " + bytes(storage.wal_bytes)
      : bytes(storage.database_bytes);
    var facts = [["schema version", storage.schema_version]];
    if (storage.backend === "sqlite") {
      facts.push(["file", bytes(storage.file_bytes)], ["WAL", bytes(storage.wal_bytes)]);
    } else {
      facts.push(["database", bytes(storage.database_bytes)]);
    }
    Object.keys(data.settings).forEach(function (name) { facts.push([name, data.settings[name]]); });
    facts.forEach(function (pair) {
      list.appendChild(el("dt", pair[0]));
      list.appendChild(el("dd", pair[1] === null || pair[1] === undefined ? "-" : String(pair[1])));
    });
  }

  function show(data) {
    lease = data.settings.worker_lease_seconds || lease;
    // The tenant columns only where the service has tenants.
    document.body.className = data.tenants.length ? "" : "no-tenants";
    showAgents(data.agents);
    showQueue(data.queue);
    showWorkers(data);
    showFailures(data.failures);
    showSlowest(data);
    showKeys(data.keys);
    showSettings(data);
    $("view").hidden = false;
    $("status").textContent = "Updated " + data.now.replace("T", " ").replace(/\.\d+Z$/, " UTC") + ".";
  }

  // -- refreshing and acting ------------------------------------------------------

  function load() {
    return call("./", {headers: headers()}).then(function (data) {
      hideError();
      show(data);
    }, function (error) {
      if (error.status === 401 && !key) {
        $("status").textContent = "Type an operator key to see the service.";
        stop();
        return;
      }
      showError(error.message);
      if (error.status === 401 || error.status === 403) { stop(); }
    });
  }

  function stop() {
    if (timer !== null) { window.clearInterval(timer); timer = null; }
  }

  function start() {
    stop();
    load();
    timer = window.setInterval(load, REFRESH_MS);
  }

  function done(text) {
    $("done").textContent = text;
    $("done").hidden = false;
  }

  function act(url, body, what) {
    if (!window.confirm(what + "?")) { return; }
    call(url, {method: "POST", headers: headers({"Content-Type": "application/json"}),
               body: JSON.stringify(body)}).then(function (data) {
      hideError();
      done(what + ": " + data.canceled.length + " canceled.");
      load();
    }, function (error) { showError(what + ": " + error.message); });
  }

  function cancelCaller(caller) {
    act("cancel-caller", {caller: caller}, "Cancel every working task of " + caller);
  }

  $("connect").addEventListener("click", function () {
    key = $("key").value.trim();
    start();
  });
  $("key").addEventListener("keydown", function (event) {
    if (event.key === "Enter") { $("connect").click(); }
  });
  $("cancel-task").addEventListener("click", function () {
    var id = $("cancel-task-id").value.trim();
    if (id) { act("cancel-task", {task_id: id}, "Cancel task " + id); }
  });
  start();  // a logged-in host session may need no key
