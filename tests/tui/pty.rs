//! The real binary in a pseudo-terminal (`expectrl`), read back through a minimal screen model:
//! cursor moves, printable text and clears — enough to read the screen although ratatui only
//! redraws the cells that changed. Used by the TUI tests that drive whole sweeps.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use expectrl::Session;

/// The screen as the terminal would show it.
pub struct Screen {
    w: usize,
    h: usize,
    cells: Vec<char>,
    row: usize,
    col: usize,
}

impl Screen {
    pub fn new(w: usize, h: usize) -> Self {
        Screen {
            w,
            h,
            cells: vec![' '; w * h],
            row: 0,
            col: 0,
        }
    }

    /// Every row, trailing blanks trimmed, joined by newlines.
    pub fn text(&self) -> String {
        self.cells
            .chunks(self.w)
            .map(|r| r.iter().collect::<String>().trim_end().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The first row (the tab bar and the running sweep's indicator).
    pub fn header(&self) -> String {
        self.cells[..self.w].iter().collect::<String>()
    }

    pub fn feed(&mut self, s: &str) {
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

/// `scaling-lab` running in a pseudo-terminal, its output folded into a [`Screen`].
pub struct Pty {
    pub s: Session,
    pub raw: Vec<u8>,
    pending: Vec<u8>,
    pub screen: Screen,
}

impl Pty {
    /// Starts `scaling-lab ARGS` in a `w`×`h` pseudo-terminal (colour on, the repository root as
    /// the working directory).
    pub fn spawn(args: &[&str], w: u16, h: u16) -> Pty {
        Pty::spawn_env(args, &[], w, h)
    }

    /// [`Pty::spawn`] with these environment variables set.
    pub fn spawn_env(args: &[&str], env: &[(&str, &std::ffi::OsStr)], w: u16, h: u16) -> Pty {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_scaling-lab"));
        cmd.args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("NO_COLOR");
        let mut s = Session::spawn(cmd).expect("spawn scaling-lab in a pty");
        s.get_process_mut().set_window_size(w, h).unwrap();
        Pty {
            s,
            raw: Vec::new(),
            pending: Vec::new(),
            screen: Screen::new(w as usize, h as usize),
        }
    }

    /// Reads what the program wrote so far; whether anything arrived.
    pub fn pump(&mut self) -> bool {
        let mut buf = [0u8; 65536];
        let mut any = false;
        loop {
            match self.s.try_read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    any = true;
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
        any
    }

    /// Waits (polling every 10 ms) until `pred` holds for the screen; panics after `timeout`.
    pub fn wait_for(
        &mut self,
        what: &str,
        pred: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> String {
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
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn send(&mut self, keys: &str) {
        self.s.send(keys).unwrap();
    }

    /// Waits for the process to exit (answering nothing); its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> expectrl::WaitStatus {
        let t0 = Instant::now();
        loop {
            self.pump();
            match self.s.get_process().status() {
                Ok(expectrl::WaitStatus::StillAlive) => {}
                Ok(st) => {
                    self.pump();
                    return st;
                }
                Err(e) => panic!("cannot query the child: {e}"),
            }
            assert!(
                t0.elapsed() < timeout,
                "did not exit; screen:\n{}",
                self.screen.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// "N/M" after `name` in the header's sweep indicator ("● nqm-sgd 30/288").
pub fn header_progress(header: &str, name: &str) -> Option<(usize, usize)> {
    let i = header.find(&format!("{name} "))?;
    let rest = &header[i + name.len() + 1..];
    let word = rest.split_whitespace().next()?;
    let (a, b) = word.split_once('/')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// "trials finished: N/M" of the Live status panel.
pub fn finished_trials(screen: &str) -> Option<(usize, usize)> {
    let i = screen.find("trials finished: ")?;
    let rest = &screen[i + "trials finished: ".len()..];
    let word = rest.split_whitespace().next()?;
    let (a, b) = word.split_once('/')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The run log (`*.jsonl`) in `dir`, if there is one (yet).
pub fn find_log(dir: &Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
}
