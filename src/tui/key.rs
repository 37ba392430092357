//! Key presses, normalised: arrows and vi keys, Tab, Enter, Esc, ctrl-c. What each key does is
//! the key table's (`keymap::KEYS`) and `app::update`'s.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// A key press, normalised (vi keys folded into arrows, release events dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Home,
    End,
    Enter,
    Esc,
    Tab,
    BackTab,
    Space,
    Backspace,
    Delete,
    /// ctrl-c (treated like `q`; a second one while confirming forces the quit).
    Interrupt,
    Char(char),
}

/// Maps a crossterm key event; `None` for releases/repeats we ignore and unmapped keys.
pub fn map_key(ev: &KeyEvent) -> Option<Key> {
    if ev.kind == KeyEventKind::Release {
        return None;
    }
    if ev.modifiers.contains(KeyModifiers::CONTROL) {
        return match ev.code {
            KeyCode::Char('c') | KeyCode::Char('C') => Some(Key::Interrupt),
            KeyCode::Char('d') => Some(Key::PageDown),
            KeyCode::Char('u') => Some(Key::PageUp),
            _ => None,
        };
    }
    Some(match ev.code {
        KeyCode::Up | KeyCode::Char('k') => Key::Up,
        KeyCode::Down | KeyCode::Char('j') => Key::Down,
        KeyCode::Left | KeyCode::Char('h') => Key::Left,
        KeyCode::Right | KeyCode::Char('l') => Key::Right,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home | KeyCode::Char('g') => Key::Home,
        KeyCode::End | KeyCode::Char('G') => Key::End,
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Tab => Key::Tab,
        KeyCode::BackTab => Key::BackTab,
        KeyCode::Char(' ') => Key::Space,
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::F(5) => Key::Char('R'),
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Delete => Key::Delete,
        _ => return None,
    })
}

/// Maps a key event while a text input is open (`App::typing`): every printable character is
/// itself (no vi keys, no space bar), so `l`, `h` and ` ` can be typed; arrows, Home, End,
/// Backspace, Delete, Enter and Esc edit; ctrl-c is still the interrupt.
pub fn map_text_key(ev: &KeyEvent) -> Option<Key> {
    if ev.kind == KeyEventKind::Release {
        return None;
    }
    if ev.modifiers.contains(KeyModifiers::CONTROL) {
        return match ev.code {
            KeyCode::Char('c') | KeyCode::Char('C') => Some(Key::Interrupt),
            _ => None,
        };
    }
    Some(match ev.code {
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Left => Key::Left,
        KeyCode::Right => Key::Right,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Delete => Key::Delete,
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vi_keys_fold_into_arrows() {
        assert_eq!(
            map_key(&KeyEvent::from(KeyCode::Char('j'))),
            Some(Key::Down)
        );
        assert_eq!(map_key(&KeyEvent::from(KeyCode::Char('k'))), Some(Key::Up));
        assert_eq!(
            map_key(&KeyEvent::from(KeyCode::Char('h'))),
            Some(Key::Left)
        );
        assert_eq!(
            map_key(&KeyEvent::from(KeyCode::Char('l'))),
            Some(Key::Right)
        );
        assert_eq!(
            map_key(&KeyEvent::from(KeyCode::Char('p'))),
            Some(Key::Char('p'))
        );
    }

    #[test]
    fn ctrl_c_is_interrupt_and_releases_are_ignored() {
        let ev = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(map_key(&ev), Some(Key::Interrupt));
        let mut rel = KeyEvent::from(KeyCode::Enter);
        rel.kind = KeyEventKind::Release;
        assert_eq!(map_key(&rel), None);
    }

    #[test]
    fn a_text_input_gets_the_letters_vi_keys_would_fold() {
        for c in ['h', 'j', 'k', 'l', 'g', 'G', ' ', 'q', '?', '1'] {
            assert_eq!(
                map_text_key(&KeyEvent::from(KeyCode::Char(c))),
                Some(Key::Char(c))
            );
        }
        assert_eq!(
            map_text_key(&KeyEvent::from(KeyCode::Backspace)),
            Some(Key::Backspace)
        );
        assert_eq!(
            map_text_key(&KeyEvent::from(KeyCode::Left)),
            Some(Key::Left)
        );
        let ev = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(map_text_key(&ev), Some(Key::Interrupt));
    }
}
