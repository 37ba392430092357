//! End-to-end: the real binary in a pseudo-terminal (100×30). Launches the default preset
//! (digits-MLP, real Burn training), waits for the first finished trial, quits with confirmation,
//! and checks that the terminal was restored and the run log exists.
//!
//! Needs the Burn build of the binary; run with `cargo test --release --test tui e2e`.

#![cfg(unix)]

use std::process::Command;
use std::time::{Duration, Instant};

use expectrl::Session;

use crate::pty::Screen;

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
