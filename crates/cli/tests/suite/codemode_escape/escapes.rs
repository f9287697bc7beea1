//! Programs that try to reach past the engine: host globals, the module loader, constructor chains aimed at
//! the bridge, and prototype pollution of what the bridge returns.

use super::*;

/// The engine's standard library still works once the worker is locked down (time zone, clock, randomness).
#[tokio::test]
async fn built_ins_work_under_the_lockdown() {
    let (report, _) = run(
        "builtins",
        SHORT,
        r#"
        const d = new Date(0);
        return [typeof d.toString(), d.getTimezoneOffset() === d.getTimezoneOffset(),
                Math.random() < 1, /a+/.test("aa"), [3, 1, 2].sort().join(), typeof performance];
        "#,
    )
    .await;
    assert_eq!(
        report.end,
        RunEnd::Returned(json!(["string", true, true, true, "1,2,3", "object"]))
    );
}

#[tokio::test]
async fn require_fs_is_not_defined() {
    let (report, _) = run(
        "require",
        SHORT,
        "return require('fs').readFileSync('/etc/passwd')",
    )
    .await;
    assert_eq!(
        threw(&report),
        "ReferenceError: require is not defined (line 1)"
    );
}

#[tokio::test]
async fn process_env_is_not_defined() {
    let (report, _) = run("process", SHORT, "return process.env").await;
    assert_eq!(
        threw(&report),
        "ReferenceError: process is not defined (line 1)"
    );
}

#[tokio::test]
async fn global_fetch_is_not_a_function() {
    let (report, _) = run(
        "fetch",
        SHORT,
        "return await globalThis.fetch('http://example.com')",
    )
    .await;
    assert!(threw(&report).starts_with("TypeError"), "{report:?}");
}

#[tokio::test]
async fn dynamic_import_of_os_rejects() {
    let (report, _) = run(
        "import",
        SHORT,
        "const os = await import('os'); return os.getenv('HOME')",
    )
    .await;
    let message = threw(&report);
    assert!(message.contains("os"), "{message}");
}

/// The global object a program reaches through `Function('return this')()` or any constructor chain off the
/// bridge's functions is its own sandbox global: standard built-ins and the bridge, nothing of the host.
#[tokio::test]
async fn function_constructor_and_bridge_constructor_chains_reach_only_the_sandbox_global() {
    let (report, _) = run(
        "constructor",
        SHORT,
        r#"
        const viaFunction = Function('return this')();
        const viaCall = call.constructor('return this')();
        const viaChain = call.__proto__.constructor.constructor('return this')();
        const viaResult = (await call("echo", {a: 1})).constructor.constructor('return this')();
        const hostish = ['require', 'process', 'std', 'os', 'fetch', 'setTimeout', 'setInterval', 'Deno',
                         'Bun', 'XMLHttpRequest', 'WebSocket', 'importScripts', 'scriptArgs', 'print'];
        return {
            same: [viaCall, viaChain, viaResult].every(g => g === viaFunction && g === globalThis),
            hostish: hostish.filter(k => typeof viaFunction[k] !== 'undefined'),
            callOwn: Object.getOwnPropertyNames(call).sort(),
            callProto: Object.getPrototypeOf(call) === Function.prototype,
            source: call.toString().includes('native code') || call.toString().length < 100,
        };
        "#,
    )
    .await;
    assert_eq!(
        report.end,
        RunEnd::Returned(json!({
            "same": true,
            "hostish": [],
            "callOwn": ["length", "name"],
            "callProto": true,
            "source": true,
        }))
    );
}

/// Polluting `Object.prototype` and the values the bridge returns changes only the program's own view: the host
/// receives exactly the JSON of the arguments' own properties.
#[tokio::test]
async fn prototype_pollution_of_bridge_values_does_not_reach_the_host() {
    let (report, seen) = run(
        "pollution",
        SHORT,
        r#"
        Object.prototype.injected = "evil";
        Object.defineProperty(Object.prototype, 'getter', {get() { return "evil"; }, enumerable: true});
        Array.prototype.extra = "evil";
        const r = await call("echo", {a: 1, list: [1, 2]});
        r.__proto__.polluted = true;
        r.constructor.prototype.more = "evil";
        JSON.stringify = () => '{"name":"denied"}';
        globalThis.JSON = {stringify: () => '"x"', parse: () => ({})};
        const again = await call("echo", {b: r.a});
        return {a: r.a, b: again.b, own: Object.keys(again)};
        "#,
    )
    .await;
    let args: Vec<Value> = seen.iter().map(|c| c.arguments.clone()).collect();
    assert_eq!(args, [json!({"a": 1, "list": [1, 2]}), json!({"b": 1})]);
    assert!(seen.iter().all(|c| c.name == "echo"));
    assert!(matches!(report.end, RunEnd::Returned(_)), "{report:?}");
}
