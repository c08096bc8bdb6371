//! The Linux layer's modules form no cycle: neither its files nor its subsystem folders
//! (fs, io, ipc, mm, net, proc, signal, time, and the files at the top) import each other
//! in a loop. The crate root is left out: it declares every module, and the syscall
//! handlers are `impl Process` blocks in each subsystem, so every file names `Process` and
//! `Errno` from it by design.
//!
//! The imports are read from the source text (`crate::a::b` and `super::b` paths, `use`
//! groups included), outside comments and `#[cfg(test)]` code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path ("io::fd") of every source file, with its text.
fn modules() -> BTreeMap<String, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read src") {
            let p = e.expect("dir entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut m = BTreeMap::new();
    for f in files {
        let rel = f
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .into_owned();
        let rel = rel.trim_end_matches(".rs").trim_end_matches("/mod");
        if rel == "lib" || rel.rsplit('/').next() == Some("tests") {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("read source");
        m.insert(rel.replace('/', "::"), code_only(&text));
    }
    m
}

/// The text without `//` comments and without what follows the first `#[cfg(test)]`.
fn code_only(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths named after `prefix` in `text`, with `use` groups (`a::{b, c::d}`) spread.
fn paths_after(text: &str, prefix: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| ident(c) || c == ':') {
            continue;
        }
        let mut segs = Vec::new();
        let mut s = rest;
        loop {
            let n = s.find(|c: char| !ident(c)).unwrap_or(s.len());
            if n == 0 {
                break;
            }
            segs.push(s[..n].to_string());
            s = &s[n..];
            if let Some(t) = s.strip_prefix("::") {
                s = t;
                if let Some(group) = s.strip_prefix('{') {
                    let end = group.find('}').unwrap_or(group.len());
                    for item in group[..end].split(',') {
                        let mut p = segs.clone();
                        p.extend(item.split("::").map(|x| x.trim().to_string()));
                        out.push(p);
                    }
                    segs.clear();
                    break;
                }
            } else {
                break;
            }
        }
        if !segs.is_empty() {
            out.push(segs);
        }
    }
    out
}

/// file -> the files it imports.
fn imports(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut g = BTreeMap::new();
    for (m, text) in mods {
        let parent: Vec<String> = {
            let mut p: Vec<String> = m.split("::").map(String::from).collect();
            p.pop();
            p
        };
        let mut paths = paths_after(text, "crate::");
        for p in paths_after(text, "super::") {
            let mut full = parent.clone();
            full.extend(p);
            paths.push(full);
        }
        let mut to = BTreeSet::new();
        for p in paths {
            // the longest prefix that is a module of the crate
            for k in (1..=p.len()).rev() {
                let cand = p[..k].join("::");
                if mods.contains_key(&cand) {
                    if &cand != m {
                        to.insert(cand);
                    }
                    break;
                }
            }
        }
        g.insert(m.clone(), to);
    }
    g
}

/// The strongly connected components with more than one member (Tarjan).
fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

fn describe(g: &BTreeMap<String, BTreeSet<String>>, comps: &[Vec<String>]) -> String {
    let mut s = String::new();
    for c in comps {
        s += &format!("cycle: {}\n", c.join(", "));
        for a in c {
            let inner: Vec<&str> = g[a]
                .iter()
                .filter(|b| c.contains(b))
                .map(String::as_str)
                .collect();
            s += &format!("  {a} -> {}\n", inner.join(", "));
        }
    }
    s
}

#[test]
fn files_form_no_cycle() {
    let g = imports(&modules());
    assert!(
        g.len() > 30,
        "found only {} modules: is the source walk broken?",
        g.len()
    );
    assert!(
        g["net::socket"].contains("io::fd"),
        "the import reader missed net::socket -> io::fd"
    );
    let c = cycles(&g);
    assert!(
        c.is_empty(),
        "modules of armada-linux import each other in a loop; move what both need below \
         both (a data type apart from its calls, a constant where it belongs), or reach the \
         other side through a method or a trait:\n{}",
        describe(&g, &c)
    );
}

#[test]
fn subsystems_form_no_cycle() {
    let files = imports(&modules());
    let top = |m: &str| m.split("::").next().unwrap_or(m).to_string();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, bs) in &files {
        let ta = top(a);
        let e = g.entry(ta.clone()).or_default();
        for b in bs {
            if top(b) != ta {
                e.insert(top(b));
            }
        }
    }
    let c = cycles(&g);
    assert!(
        c.is_empty(),
        "subsystems of armada-linux import each other in a loop:\n{}",
        describe(&g, &c)
    );
}

#[test]
fn the_reader_sees_a_cycle() {
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    g.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    g.insert("d".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(
        cycles(&g),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
    let p = paths_after(
        "use crate::io::{fd::Kind, poll};\nlet x = crate::net::addr::AF_UNIX;",
        "crate::",
    );
    assert_eq!(
        p,
        vec![
            vec!["io", "fd", "Kind"],
            vec!["io", "poll"],
            vec!["net", "addr", "AF_UNIX"]
        ]
    );
}
