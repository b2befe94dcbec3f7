"""CLUB_EMAIL_PROVIDER_URL picks the e-mail adapter by its scheme, and `club up`
starts a sandbox only where one plays the provider configured."""

import pytest

from adapters.providers.email_http import HttpEmailProvider
from adapters.providers.email_smtp import SmtpEmailProvider
from entrypoints.config.settings import ConfigError, Settings
from entrypoints.runtime.bootstrap import Role
from entrypoints.runtime.provider_urls import email_provider, sandbox_plays
from entrypoints.runtime.supervisor import roles_to_start

MAIL_SERVER = {
    "CLUB_EMAIL_PROVIDER_URL": "smtp+starttls://club:s3cret@mail.example.org",
    "CLUB_EMAIL_FROM": "club@example.org",
}


def test_an_http_url_is_the_providers_api() -> None:
    provider = email_provider(Settings.from_env({}))
    assert isinstance(provider, HttpEmailProvider)
    provider.close()


def test_an_smtp_url_is_a_mail_server_with_its_sender() -> None:
    settings = Settings.from_env(MAIL_SERVER)
    assert isinstance(email_provider(settings), SmtpEmailProvider)
    assert settings.email_sender == "club@example.org"


def test_a_mail_server_without_a_sender_names_the_setting_that_fixes_it() -> None:
    with pytest.raises(ConfigError, match="set CLUB_EMAIL_FROM") as refused:
        Settings.from_env(
            {"CLUB_EMAIL_PROVIDER_URL": MAIL_SERVER["CLUB_EMAIL_PROVIDER_URL"]}
        )
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    "sender",
    ["club@example.org\r\nBcc: everyone@example.org", "club\x00@example.org",
     "no-at-sign", "Club <club@example.org>", "a@b@example.org", "clüb@example.org",
     "club@example.org\u2028"],
)  # fmt: skip
def test_a_sender_that_is_not_one_address_is_refused(sender: str) -> None:
    with pytest.raises(ConfigError, match="CLUB_EMAIL_FROM"):
        Settings.from_env(MAIL_SERVER | {"CLUB_EMAIL_FROM": sender})


def test_a_password_is_not_sent_in_clear_to_another_host() -> None:
    plain = {"CLUB_EMAIL_FROM": "club@example.org"}
    with pytest.raises(ConfigError, match="smtp\\+starttls://") as refused:
        Settings.from_env(
            plain | {"CLUB_EMAIL_PROVIDER_URL": "smtp://u:pw@mail.example"}
        )
    assert "u:***@mail.example" in str(refused.value)  # the password masked
    local = Settings.from_env(
        plain | {"CLUB_EMAIL_PROVIDER_URL": "smtp://u:pw@localhost"}
    )
    assert isinstance(email_provider(local), SmtpEmailProvider)  # a relay here


def test_an_unknown_scheme_names_both_kinds() -> None:
    with pytest.raises(ConfigError, match="http:// or smtp://"):
        Settings.from_env({"CLUB_EMAIL_PROVIDER_URL": "smtps://mail.example.org"})


@pytest.mark.parametrize(
    ("url", "plays"),
    [
        ("http://127.0.0.1:8025", True),
        ("http://localhost:8025", True),
        ("http://0.0.0.0:8025", True),
        ("https://api.mail.example", False),
        ("http://10.0.0.7:8025", False),
        ("smtp://127.0.0.1:25", False),
    ],
)
def test_a_sandbox_plays_only_an_http_provider_on_this_machine(
    url: str, plays: bool
) -> None:
    assert sandbox_plays(url) is plays


def test_club_up_starts_no_e_mail_sandbox_beside_a_mail_server() -> None:
    started = roles_to_start(Settings.from_env(MAIL_SERVER))
    assert Role("sandbox", "email") not in started
    assert Role("sandbox", "payment") in started
    assert Role("worker", "notifications") in started


def test_club_up_starts_both_sandboxes_by_default() -> None:
    started = roles_to_start(Settings.from_env({}))
    assert {Role("sandbox", "email"), Role("sandbox", "payment")} <= set(started)
