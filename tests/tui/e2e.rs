//! End-to-end: the real binary in a pseudo-terminal (100×30). Launches the default preset
//! (digits-MLP, real Burn training), waits for the first finished trial, quits with confirmation,
//! and checks that the terminal was restored and the run log exists.
//!
//! Needs the Burn build of the binary; run with `cargo test --release --test tui e2e`.

#![cfg(unix)]

use std::process::Command;
use std::time::{Duration, Instant};

use expectrl::Session;

/// A minimal screen model of what the TUI writes (cursor moves, printable text, clears), enough
/// to read the screen back although ratatui only redraws changed cells.
struct Screen {
    w: usize,
    h: usize,
    cells: Vec<char>,
    row: usize,
    col: usize,
}

impl Screen {
    fn new(w: usize, h: usize) -> Self {
        Screen {
            w,
            h,
            cells: vec![' '; w * h],
            row: 0,
            col: 0,
        }
    }
    fn text(&self) -> String {
        self.cells
            .chunks(self.w)
            .map(|r| r.iter().collect::<String>().trim_end().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }
    fn feed(&mut self, s: &str) {
        let mut it = s.chars().peekable();
        while let Some(c) = it.next() {
            match c {
                '\x1b' => match it.next() {
                    Some('[') => {
                        let mut params = String::new();
                        let mut fin = ' ';
                        for d in it.by_ref() {
                            if ('@'..='~').contains(&d) {
                                fin = d;
                                break;
                            }
                            params.push(d);
                        }
                        let nums: Vec<usize> = params
                            .trim_start_matches('?')
                            .split(';')
                            .map(|x| x.parse().unwrap_or(0))
                            .collect();
                        let n = |i: usize| nums.get(i).copied().filter(|v| *v > 0).unwrap_or(1);
                        match fin {
                            'H' | 'f' => {
                                self.row = (n(0) - 1).min(self.h - 1);
                                self.col = (n(1) - 1).min(self.w - 1);
                            }
                            'J' if nums.first() == Some(&2) || params == "2" => {
                                self.cells.fill(' ')
                            }
                            'A' => self.row = self.row.saturating_sub(n(0)),
                            'B' => self.row = (self.row + n(0)).min(self.h - 1),
                            'C' => self.col = (self.col + n(0)).min(self.w - 1),
                            'D' => self.col = self.col.saturating_sub(n(0)),
                            'G' => self.col = (n(0) - 1).min(self.w - 1),
                            _ => {}
                        }
                    }
                    Some(']') => {
                        // OSC: until BEL or ST
                        while let Some(d) = it.next() {
                            if d == '\x07' || (d == '\x1b' && it.peek() == Some(&'\\')) {
                                break;
                            }
                        }
                    }
                    _ => {}
                },
                '\r' => self.col = 0,
                '\n' => self.row = (self.row + 1).min(self.h - 1),
                c if c >= ' ' => {
                    if self.col < self.w {
                        self.cells[self.row * self.w + self.col] = c;
                    }
                    self.col += 1;
                }
                _ => {}
            }
        }
    }
}

struct Pty {
    s: Session,
    raw: Vec<u8>,
    pending: Vec<u8>,
    screen: Screen,
}

impl Pty {
    fn pump(&mut self) {
        let mut buf = [0u8; 65536];
        loop {
            match self.s.try_read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    self.raw.extend_from_slice(&buf[..n]);
                    self.pending.extend_from_slice(&buf[..n]);
                    // feed only complete UTF-8
                    let valid = match std::str::from_utf8(&self.pending) {
                        Ok(_) => self.pending.len(),
                        Err(e) => e.valid_up_to(),
                    };
                    let text = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
                    self.screen.feed(&text);
                    self.pending.drain(..valid);
                }
                Err(_) => break,
            }
        }
    }
    fn wait_for(&mut self, what: &str, pred: impl Fn(&str) -> bool, timeout: Duration) -> String {
        let t0 = Instant::now();
        loop {
            self.pump();
            let text = self.screen.text();
            if pred(&text) {
                return text;
            }
            if t0.elapsed() > timeout {
                panic!("timed out waiting for {what}; screen:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn finished_trials(screen: &str) -> Option<usize> {
    let i = screen.find("trials finished: ")?;
    let rest = &screen[i + "trials finished: ".len()..];
    rest.split('/').next()?.trim().parse().ok()
}

#[test]
fn tui_launches_digits_mlp_and_restores_the_terminal() {
    let runs = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_scaling-lab"));
    cmd.arg("--runs-dir").arg(runs.path());
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd.env("TERM", "xterm-256color");
    cmd.env_remove("NO_COLOR");
    let mut s = Session::spawn(cmd).expect("spawn scaling-lab in a pty");
    s.get_process_mut().set_window_size(100, 30).unwrap();
    let mut p = Pty {
        s,
        raw: Vec::new(),
        pending: Vec::new(),
        screen: Screen::new(100, 30),
    };

    p.wait_for(
        "the setup screen with the default preset",
        |t| t.contains("Study") && t.contains("digits-mlp-momentum") && t.contains("launch"),
        Duration::from_secs(60),
    );
    p.s.send("\r").unwrap();
    // Enter again only if launching needed it (it does not: Enter launches from either panel)
    let t = p.wait_for(
        "a finished trial",
        |t| finished_trials(t).is_some_and(|n| n >= 1),
        Duration::from_secs(600),
    );
    assert!(
        t.contains("steps to"),
        "the Live screen shows the scaling chart:\n{t}"
    );

    p.s.send("q").unwrap();
    let t0 = Instant::now();
    let mut confirmed = false;
    let status = loop {
        p.pump();
        let text = p.screen.text();
        if !confirmed && text.contains("Quit while the sweep runs?") {
            assert!(text.contains("resumed"), "{text}");
            p.s.send("y").unwrap();
            confirmed = true;
        }
        match p.s.get_process().status() {
            Ok(expectrl::WaitStatus::StillAlive) => {}
            Ok(st) => break st,
            Err(e) => panic!("cannot query the child: {e}"),
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "did not exit; screen:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // drain what is left
    p.pump();
    assert!(
        matches!(status, expectrl::WaitStatus::Exited(_, 0)),
        "exit status {status:?}"
    );
    let raw = String::from_utf8_lossy(&p.raw);
    assert!(raw.contains("\x1b[?1049h"), "entered the alternate screen");
    assert!(raw.contains("\x1b[?1049l"), "left the alternate screen");
    assert!(raw.contains("\x1b[?25h"), "showed the cursor again");
    let logs: Vec<_> = std::fs::read_dir(runs.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 1, "one run log in the runs dir");
    let text = std::fs::read_to_string(logs[0].path()).unwrap();
    assert!(
        text.lines().count() >= 2,
        "header and at least one trial:\n{text}"
    );
}
