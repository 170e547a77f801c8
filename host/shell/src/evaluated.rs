//! Arguments bash evaluates as arithmetic: subscripts of names and integer expressions.
//!
//! Attack: a command hidden where no substitution shows. Bash evaluates array subscripts and
//! arithmetic inside the arguments of some builtins, and evaluating them expands any `$(...)`
//! they hold, even from a single-quoted word: `test -v 'a[$(rm -rf src)]'` runs `rm`, and so
//! do `[ -v ... ]`, `[[ ... -eq ... ]]`, `printf -v`, `read`, `declare`/`typeset`/`local`,
//! `let`, `unset`, `wait -p`, `mapfile`, `(( ))`, `$(( ))`, `${a[...]}` and `${x:off:len}`.
//! A bare name there is evaluated too, recursively: with `x='a[$(rm -rf src)]'`, `(( x ))`
//! runs `rm`. So in these places the `$(...)` text is parsed as a nested command line (deny
//! rules and breakers see `rm`), and anything but digits and operators (a name, a substitution)
//! makes the part unread ([`crate::unread`]): it is never read-only, and never runs without a
//! person in autonomous mode.
//!
//! The same holds one step removed: a variable given the integer or reference attribute
//! (`declare -i n`) evaluates whatever is later assigned to it (`n='a[$(rm -rf src)]'`), and a
//! prompt variable (`PS4`, `PROMPT_COMMAND`, `BASH_ENV`) holds code bash runs later (`PS4='$(rm
//! -rf src)'; set -x`), as does `${x@P}`, which expands a value as a prompt.

use super::lex::Word;
use super::wrappers::program_name;

/// How bash evaluates an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eval {
    /// A variable name; a subscript in it is evaluated (`a[i]`).
    Name,
    /// An arithmetic expression (`let`, `(( ))`, `[[ x -eq y ]]`).
    Expr,
    /// `NAME[sub]=value` (`declare`): the subscript is evaluated, and the value too: as an
    /// expression for an integer variable (`declare -i`), as a name for a reference
    /// (`declare -n`, whose target's subscript is evaluated at each use).
    Assign { integer: bool, nameref: bool },
}

/// Variables whose value bash later runs or expands as code: the prompts (`set -x` expands
/// `PS4`), `PROMPT_COMMAND`, and the startup files a child shell sources.
const CODE_VARIABLES: &[&str] = &[
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "BASH_ENV",
    "ENV",
];

fn is_code_variable(name: &str) -> bool {
    let name = name.split_once('[').map_or(name, |(n, _)| n);
    CODE_VARIABLES.contains(&name.strip_suffix('+').unwrap_or(name))
}

/// Whether `text`, evaluated as `how`, names a variable bash runs as code (`PS4=...`, `read
/// PS4`, `declare -n r=PS4`).
pub(crate) fn names_code_variable(text: &str, how: Eval) -> bool {
    match how {
        Eval::Name => is_code_variable(text),
        Eval::Expr => false,
        Eval::Assign { nameref, .. } => match text.split_once('=') {
            Some((name, value)) => is_code_variable(name) || (nameref && is_code_variable(value)),
            None => is_code_variable(text),
        },
    }
}

/// Whether evaluating `text` as `how` can only compute a number: no name, no substitution.
pub(crate) fn inert(text: &str, how: Eval) -> bool {
    match how {
        Eval::Name => name_inert(text),
        Eval::Expr => expr_inert(text),
        Eval::Assign { integer, nameref } => match text.split_once('=') {
            Some((name, value)) => {
                name_inert(name.strip_suffix('+').unwrap_or(name))
                    && (!integer || expr_inert(value))
                    && (!nameref || name_inert(value))
            }
            None => name_inert(text),
        },
    }
}

/// Digits, blanks and operators only.
pub(crate) fn expr_inert(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_digit() || c.is_ascii_whitespace() || "+-*/%<>=!&|^~?:,()".contains(c))
}

/// A plain name, or one with a subscript that is `@`, `*` or inert.
pub(crate) fn name_inert(text: &str) -> bool {
    let (name, sub) = match text.split_once('[') {
        Some((name, rest)) => match rest.strip_suffix(']') {
            Some(sub) => (name, Some(sub)),
            None => return false,
        },
        None => (text, None),
    };
    let ident = name.starts_with(|c: char| c == '_' || c.is_ascii_alphabetic())
        && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
    ident && sub.is_none_or(|s| matches!(s, "@" | "*") || expr_inert(s))
}

/// The inside of `${...}` (without the braces): its subscript (`a[i]`) and substring offset and
/// length (`x:off:len`) are evaluated as arithmetic. Whether they are inert.
pub(crate) fn braced_inert(inner: &str) -> bool {
    // `${!x}` reads the name to expand from `x`'s value, subscript and all; `${!a[@]}` and
    // `${!prefix*}` only list names.
    if let Some(rest) = inner.strip_prefix('!')
        && !(rest.ends_with("[@]") || rest.ends_with("[*]") || rest.ends_with(['*', '@']))
    {
        return false;
    }
    // `${x@P}` expands the value as a prompt, running its `$(...)`.
    if inner.ends_with("@P") {
        return false;
    }
    let body = inner.trim_start_matches(['#', '!']);
    let name_len = body
        .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
        .unwrap_or(body.len());
    let rest = body.get(name_len..).unwrap_or("");
    let rest = match rest.strip_prefix('[') {
        Some(after) => {
            let Some(close) = after.find(']') else {
                return false;
            };
            let sub = after.get(..close).unwrap_or("");
            if !(matches!(sub, "@" | "*") || expr_inert(sub)) {
                return false;
            }
            after.get(close + 1..).unwrap_or("")
        }
        None => rest,
    };
    match rest.strip_prefix(':') {
        // `${x:-default}`, `${x:=v}`, `${x:?msg}`, `${x:+alt}` are not offsets.
        Some(r) if !r.starts_with(['-', '=', '?', '+']) => expr_inert(r),
        _ => true,
    }
}

/// The arguments of `prog` (the words after it) that bash evaluates, and how.
pub(crate) fn evaluated<'a, 's>(prog: &str, args: &'a [Word<'s>]) -> Vec<(&'a Word<'s>, Eval)> {
    let mut out = Vec::new();
    match prog {
        "test" | "[" => after_option(args, "-v", Eval::Name, &mut out),
        "[[" => {
            after_option(args, "-v", Eval::Name, &mut out);
            for (i, a) in args.iter().enumerate() {
                if matches!(
                    a.text.as_ref(),
                    "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge"
                ) {
                    let before = i.checked_sub(1).and_then(|j| args.get(j));
                    out.extend(
                        before
                            .into_iter()
                            .chain(args.get(i + 1))
                            .map(|w| (w, Eval::Expr)),
                    );
                }
            }
        }
        "((" | "let" => out.extend(args.iter().map(|w| (w, Eval::Expr))),
        "printf" => options(args, "v", "", &mut out),
        "wait" => options(args, "p", "", &mut out),
        "read" => {
            options(args, "a", "dinNptu", &mut out);
            out.extend(operands(args, "adinNptu").map(|w| (w, Eval::Name)));
        }
        "mapfile" | "readarray" => {
            out.extend(operands(args, "dnOsuCc").map(|w| (w, Eval::Name)));
        }
        "unset" => out.extend(operands(args, "").map(|w| (w, Eval::Name))),
        p if DECLARES.contains(&p) => {
            let flags = |letter: char| {
                declare_flags(args).any(|f| f.starts_with('-') && f.contains(letter))
            };
            let how = Eval::Assign {
                integer: flags('i'),
                nameref: flags('n'),
            };
            out.extend(operands(args, "").map(|w| (w, how)));
        }
        _ => {}
    }
    out
}

const DECLARES: &[&str] = &["declare", "typeset", "local", "export", "readonly"];

/// The option words of a `declare`-like command (before its operands).
fn declare_flags<'a>(args: &'a [Word<'_>]) -> impl Iterator<Item = &'a str> {
    args.iter()
        .map(|a| a.text.as_ref())
        .take_while(|t| t.starts_with(['-', '+']) && *t != "--")
}

/// Whether the simple command `words` gives a variable the integer or reference attribute
/// (`declare -i n`, `local -n r`): later assignments to it are evaluated.
pub(crate) fn gives_attribute(words: &[Word<'_>]) -> bool {
    command(words).is_some_and(|(prog, args)| {
        DECLARES.contains(&prog)
            && declare_flags(args).any(|f| f.starts_with('-') && f.contains(['i', 'n']))
    })
}

/// The program a simple command runs (after its leading assignments) and its arguments.
fn command<'a, 's>(words: &'a [Word<'s>]) -> Option<(&'a str, &'a [Word<'s>])> {
    let at = words.iter().position(|w| !w.assignment)?;
    let prog = words.get(at)?;
    Some((program_name(&prog.text), words.get(at + 1..).unwrap_or(&[])))
}

/// Whether the simple command `words` assigns a value that is not a plain number: leading
/// assignments and `declare` operands with such values, and builtins that assign what they read
/// or compute (`read`, `printf -v`, `mapfile`, `wait -p`). Under an integer or reference
/// attribute, that value is evaluated.
pub(crate) fn assigns_unknown(words: &[Word<'_>]) -> bool {
    let value_unknown = |t: &str| t.split_once('=').is_some_and(|(_, v)| !expr_inert(v));
    if words
        .iter()
        .take_while(|w| w.assignment)
        .any(|w| value_unknown(&w.text))
    {
        return true;
    }
    match command(words) {
        Some(("read" | "printf" | "mapfile" | "readarray" | "wait", _)) => true,
        Some((p, args)) if DECLARES.contains(&p) => {
            operands(args, "").any(|w| value_unknown(&w.text))
        }
        _ => false,
    }
}

/// The word after each `option` among `args`.
fn after_option<'a, 's>(
    args: &'a [Word<'s>],
    option: &str,
    how: Eval,
    out: &mut Vec<(&'a Word<'s>, Eval)>,
) {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a.text == option
            && let Some(v) = it.next()
        {
            out.push((v, how));
        }
    }
}

/// The values of the short options in `names` (`-v NAME`, `-vNAME`, `-rv NAME`), which are
/// names; option letters in `skip` take a value that is not.
fn options<'a, 's>(
    args: &'a [Word<'s>],
    names: &str,
    skip: &str,
    out: &mut Vec<(&'a Word<'s>, Eval)>,
) {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let t = a.text.as_ref();
        if t == "--" || !t.starts_with('-') || t.len() < 2 {
            return;
        }
        for (i, ch) in t.char_indices().skip(1) {
            if names.contains(ch) || skip.contains(ch) {
                let attached = t.get(i + 1..).unwrap_or("");
                if attached.is_empty() {
                    if let Some(v) = it.next()
                        && names.contains(ch)
                    {
                        out.push((v, Eval::Name));
                    }
                } else if names.contains(ch) && !name_inert(attached) {
                    // `-va[i]`: the whole word is judged, and it is not a plain name.
                    out.push((a, Eval::Name));
                }
                break;
            }
        }
    }
}

/// The operands among `args`: words after the options, skipping the values of the option
/// letters in `valued`.
fn operands<'a, 's>(args: &'a [Word<'s>], valued: &'a str) -> impl Iterator<Item = &'a Word<'s>> {
    let mut skip_next = false;
    let mut options_done = false;
    args.iter().filter(move |a| {
        let t = a.text.as_ref();
        if std::mem::take(&mut skip_next) {
            return false;
        }
        if !options_done {
            if t == "--" {
                options_done = true;
                return false;
            }
            if t.len() > 1 && t.starts_with(['-', '+']) {
                let last = t.chars().last().unwrap_or('-');
                skip_next = t.starts_with('-') && valued.contains(last);
                return false;
            }
            options_done = true;
        }
        true
    })
}
