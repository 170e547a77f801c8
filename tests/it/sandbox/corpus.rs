//! The command lines the differential test runs: every shell line of the
//! policy tables, and a generated corpus (a fixed seed) of the constructs
//! where readings of a line differ — quoting and escapes in every form,
//! brace expansion, redirections between words (`a &>f b`), keywords as
//! arguments, groups, loops, functions, here-documents, comments — with
//! a few constructs the analyser reads as opaque by design — and the
//! contexts where bash evaluates text the line only quotes ([`evaluated`]).

/// The command lines of the policy tables: terminal specifiers and shell
/// code given to `code_run`.
pub fn table_lines() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cases");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap();
        for case in table["case"].as_array().unwrap() {
            let tool = case["tool"].as_str().unwrap_or_default();
            let Some(spec) = case.get("specifier").and_then(|s| s.as_str()) else {
                continue;
            };
            let line = match tool {
                "terminal_exec" => spec,
                "code_run" => match spec.split_once(": ") {
                    Some(("sh" | "bash", source)) => source,
                    _ => continue,
                },
                _ => continue,
            };
            out.push(line.to_owned());
        }
    }
    out
}

/// A small deterministic generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const PROGRAMS: &[&str] = &[
    "ls", "cat", "echo", "grep", "rm", "touch", "git", "npm", "python3", "sed", "find", "curl",
    "printf", "test", "true", "false", "cd", "wc", "head", "sort", "env", "timeout", "nice", "tee",
    "mkdir", "cp", "mv", "chmod", "tar", "make", "cargo", "read", "command", "builtin", "export",
    "set", ":", "sudo", "local", "declare", "type", "wait", "kill", "exit", "shift",
];

/// Programs the analyser reads as opaque by design (they run text or
/// input it cannot see): a few, so the corpus stays mostly checkable.
const OPAQUE_PROGRAMS: &[&str] = &[
    "eval",
    "source",
    ".",
    "exec",
    "trap",
    "xargs",
    "[",
    "{rm,-f,x}",
];

const PLAIN: &[&str] = &[
    "-la",
    "-rf",
    "foo",
    "a.txt",
    "src/main.rs",
    "--force",
    "-n",
    "1",
    "x=y",
    "--",
    "-",
    ".",
    "-c",
    "--exec-path=x",
    "a#b",
    "if",
    "then",
    "fi",
    "{",
    "}",
    "!",
    "in",
    "do",
    "done",
    "]",
    "=",
    "--x=1",
    "%s",
    "@",
    "a,b",
    "[x",
    "case",
    "esac",
    "function",
    "time",
];

const QUOTED: &[&str] = &[
    "'a b'",
    "'$HOME'",
    "'*'",
    "';'",
    "'&&'",
    "\"it's\"",
    "\"a b\"",
    "\"a\\\"b\"",
    "\"\\$x\"",
    "\"a\\\\b\"",
    "\"\\`\"",
    "$'\\x72m'",
    "$'a\\tb'",
    "$'\\''",
    "$'\\n'",
    "$'\\101'",
    "$'\\u0072m'",
    "$'\\c@x'",
    "$'\\e'",
    "$'\\\\'",
    "a\\ b",
    "\\;",
    "\\&",
    "\\\\",
    "\\'",
    "\\\"",
    "\\$x",
    "''",
    "\"\"",
    "'a'\"b\"c",
    "$\"x\"",
    "\"'\"",
    "'\"'",
    "\\#x",
    "$'\\x41\\x42'",
    "\"a\nb\"",
    "'x\ny'",
];

const BRACES: &[&str] = &[
    "{a,b}",
    "x{1,2}y",
    "{a,}",
    "{a}",
    "{a,b{c,d}}",
    "{,x}",
    "a{b,c}{d,e}",
    "{1..3}",
    "{a..c}",
    "\\{a,b}",
    "'{a,b}'",
    "{a,'b c'}",
    "{x",
    "x}",
];

const REDIRS: &[&str] = &[
    "> out",
    ">> out",
    "2> err",
    "2>&1",
    "&> all",
    "&>> all",
    ">& f",
    "<> f",
    ">| f",
    "2>/dev/null",
    "<<< \"x y\"",
    "3> f3",
    "1>&2",
    ">&2",
    "<&0",
    "2>&-",
    ">out2",
    "< /dev/null",
];

fn word(rng: &mut Rng) -> String {
    let parts = 1 + rng.below(3);
    let mut w = String::new();
    for _ in 0..parts {
        let part = match rng.below(10) {
            0..=3 => rng.pick(PLAIN),
            4..=7 => rng.pick(QUOTED),
            _ => rng.pick(BRACES),
        };
        w.push_str(part);
    }
    if rng.chance(3) {
        w.push_str("\\\n");
        w.push_str(rng.pick(PLAIN));
    }
    w
}

fn simple(rng: &mut Rng) -> String {
    let mut out = Vec::new();
    if rng.chance(15) {
        out.push(format!(
            "X{}={}",
            rng.below(3),
            rng.pick(&["1", "'a b'", "", "$'\\t'"])
        ));
    }
    if rng.chance(5) {
        out.push(rng.pick(REDIRS).to_owned());
    }
    let program = match rng.below(40) {
        // The program name itself quoted or escaped.
        0..=3 => rng
            .pick(&[
                "'r'm",
                "\"ls\"",
                "\\rm",
                "$'\\x63at'",
                "e\"ch\"o",
                "r\\\nm",
                "''rm",
            ])
            .to_owned(),
        4 => rng.pick(OPAQUE_PROGRAMS).to_owned(),
        _ => rng.pick(PROGRAMS).to_owned(),
    };
    out.push(program);
    for _ in 0..rng.below(4) {
        if rng.chance(15) {
            out.push(rng.pick(REDIRS).to_owned());
        } else {
            out.push(word(rng));
        }
    }
    if rng.chance(8) {
        // `a &>f b`: b is an argument of a, not a second command.
        out.push(rng.pick(&["&>/dev/null", "&>f", ">&f"]).to_owned());
        out.push(word(rng));
    }
    out.join(rng.pick(&[" ", " ", " ", "\t", "  "]))
}

fn pipeline(rng: &mut Rng, depth: usize) -> String {
    let mut s = String::new();
    if rng.chance(5) {
        s.push_str("! ");
    }
    s.push_str(&command(rng, depth));
    for _ in 0..rng.below(2) {
        s.push_str(rng.pick(&[" | ", "|", " |& "]));
        s.push_str(&command(rng, depth));
    }
    s
}

fn list(rng: &mut Rng, depth: usize) -> String {
    let mut s = pipeline(rng, depth);
    for _ in 0..rng.below(3) {
        s.push_str(rng.pick(&["; ", " && ", " || ", " & ", "\n", ";", "&&", "||"]));
        s.push_str(&pipeline(rng, depth));
    }
    s
}

fn command(rng: &mut Rng, depth: usize) -> String {
    if depth >= 2 || rng.chance(80) {
        return simple(rng);
    }
    let d = depth + 1;
    match rng.below(11) {
        0 => format!("{{ {}; }}", list(rng, d)),
        1 => format!("( {} )", list(rng, d)),
        2 => format!(
            "if {}; then {}; else {}; fi",
            list(rng, d),
            list(rng, d),
            list(rng, d)
        ),
        3 => format!("for v in a 'b c'; do {}; done", list(rng, d)),
        // With builtins enabled a condition such as `:` holds forever: the
        // body ends the loop after one pass so the line takes no longer
        // than its commands (on its own line, in case the list ends in `&`).
        4 => format!("while {}; do {}\nbreak; done", simple(rng), list(rng, d)),
        5 if rng.chance(30) => {
            format!(
                "case {} in a|b) {};; *) {};; esac",
                word(rng),
                list(rng, d),
                list(rng, d)
            )
        }
        6 if rng.chance(30) => format!("f{d}() {{ {}; }}; f{d}", list(rng, d)),
        7 | 9 => format!("[[ -n {} ]] && {}", word(rng), simple(rng)),
        10 => format!("({})&& {}", simple(rng), simple(rng)),
        5 | 6 => format!("time {}", simple(rng)),
        _ => format!("cat <<'EOF'\n$(rm -rf /) `x`\nEOF\n{}", simple(rng)),
    }
}

pub fn generate(rng: &mut Rng) -> String {
    let mut line = list(rng, 0);
    if rng.chance(10) {
        line.push_str(rng.pick(&[" # trailing comment; rm x", "#c", " #"]));
    }
    line
}

/// The name of the probe command in [`evaluated`] line `i`: a program no
/// image has, so it reaches the harness's not-found handler and shows in
/// the trace under this name, whoever runs it.
pub fn probe(i: usize) -> String {
    format!("wprobe{i}")
}

/// Where bash evaluates text that a reader of the line sees only as a
/// quoted word or a variable's value: array subscripts in the arguments
/// of builtins (bash evaluates them as arithmetic, and arithmetic runs
/// the command substitutions inside a subscript), arithmetic contexts,
/// `${...}` operators, prompt expansion (`PS4` under `set -x`, `${x@P}`),
/// variables a child bash expands (`BASH_ENV`, `PS4`), traps, aliases,
/// exported functions, completion word lists. `{P}` is where the probe
/// goes. Each of these ran its probe under bash 5.2 (the image's), so a
/// probe missing from the trace means the tracer stopped seeing, not
/// that bash changed its mind.
const EVALUATED: &[&str] = &[
    // Subscripts in builtin arguments.
    "test -v 'a[$({P})]'",
    "[ -v 'a[$({P} > y)]' ]",
    "[[ -v 'a[$({P})]' ]]",
    "[[ -v a[$({P})] ]]",
    "printf -v 'a[$({P})]' x",
    "read 'a[$({P})]' <<< x",
    "declare 'a[$({P})]=1'",
    "declare -a 'a[$({P})]=1'",
    "declare -i n='a[$({P})]'",
    "declare -i n; n='a[$({P})]'",
    "declare -n r='a[$({P})]'; : \"$r\"",
    "f() { local 'a[$({P})]=1'; }; f",
    "a=(1); unset 'a[$({P})]'",
    "a=(1); unset -v 'a[$({P} x)]'",
    "let 'a[$({P})]=1'",
    "let 'x=a[$({P})]'",
    ": & wait -n -p 'a[$({P})]'",
    "mapfile -C {P} -c 1 a <<< x",
    "a['$({P})']=1",
    "x='a[$({P})]'; a[x]=1",
    // Arithmetic on a value that names a subscript.
    "x='a[$({P})]'; echo $((x))",
    "x='a[$({P})]'; (( x ))",
    "x='a[$({P})]'; : $[x]",
    "x='a[$({P})]'; [[ $x -eq 0 ]]",
    "x='a[$({P})]'; [[ x -eq 0 ]]",
    "[[ 'a[$({P})]' -eq 0 ]]",
    "[[ 1 -lt 'a[$({P})]' ]]",
    "for (( i = 'a[$({P})]'; i < 1; i++ )); do :; done",
    "x='a[$({P})]'; y=abc; echo ${y:x:1}",
    "x='a[$({P})]'; y=abc; echo ${y:0:x}",
    "x='a[$({P})]'; a=(1 2); echo ${a[@]:x}",
    "x='a[$({P})]'; echo ${a[x]}",
    "x='a[$({P})]'; case 1 in $((x))) ;; esac",
    // `${...}` operators.
    "echo ${x:-$({P})}",
    "echo ${x:=$({P})}",
    "x=1; echo ${x:+$({P})}",
    "x=abc; echo ${x/a/$({P})}",
    "echo \"${x:-`{P}`}\"",
    "x='a[$({P})]'; echo ${!x}",
    "x='a[$({P})]'; echo \"${!x}\"",
    // Prompt expansion.
    "PS4='$({P}) '; set -x; :",
    "PS4='`{P}`'; set -x; echo",
    "x='$({P})'; echo \"${x@P}\"",
    "a=(1); b='a[$({P})]'; echo ${b@P}",
    // Variables a child bash expands.
    "BASH_ENV='$({P})' bash -c :",
    "PS4='$({P})' bash -xc :",
    // Traps.
    "trap '{P}' EXIT",
    "trap '{P}' DEBUG; :",
    "trap '{P}' ERR; false",
    // Commands defined now and run later.
    "f() { {P}; }; export -f f; bash -c f",
    "f() { {P} x; }; f",
    "shopt -s expand_aliases; alias w={P}\nw",
    "compgen -W '$({P})' x",
];

/// The [`EVALUATED`] lines, each with its own probe ([`probe`]).
pub fn evaluated() -> Vec<String> {
    EVALUATED
        .iter()
        .enumerate()
        .map(|(i, t)| t.replace("{P}", &probe(i)))
        .collect()
}
