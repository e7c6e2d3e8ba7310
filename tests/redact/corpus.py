"""Positive and negative corpora for the detectors (realistic examples, formatting variants).

Test keys and card numbers are the vendors' published test values or random strings of the
documented shape; none is a live credential.
"""

from __future__ import annotations

# (label, text, the part that must disappear)
POSITIVE: list[tuple[str, str, str]] = [
    # e-mail
    ("EMAIL", "Mail jane.doe+billing@example.co.uk today", "jane.doe+billing@example.co.uk"),
    ("EMAIL", "Reply to <bob@mail.example.org>", "bob@mail.example.org"),
    ("EMAIL", "Contact: O'Brien@example.ie.", "O'Brien@example.ie"),
    ("EMAIL", "cc first.last@sub.domain-name.io, thanks", "first.last@sub.domain-name.io"),
    ("EMAIL", "mailto:support@example.com", "support@example.com"),
    ("EMAIL", "USER_42@EXAMPLE.COM wrote", "USER_42@EXAMPLE.COM"),
    # phone numbers: NANP formats and international E.164-like
    ("PHONE", "call (415) 555-0134 after 5pm", "555-0134"),
    ("PHONE", "cell 415.555.0134", "415.555.0134"),
    ("PHONE", "office 415 555 0134", "415 555 0134"),
    ("PHONE", "reach me at +1 415 555 0134", "415 555 0134"),
    ("PHONE", "+1-415-555-0134", "415-555-0134"),
    ("PHONE", "toll free 1-800-555-0199", "800-555-0199"),
    ("PHONE", "London +44 20 7946 0958", "7946 0958"),
    ("PHONE", "Berlin +49 (0)30 901820", "901820"),
    ("PHONE", "Paris +33 1 23 45 67 89", "23 45 67 89"),
    ("PHONE", "whatsapp +14155550134", "14155550134"),
    ("PHONE", "phone: 4155550134", "4155550134"),
    ("PHONE", "on 2024-05-01 call 415-555-0134", "415-555-0134"),
    # payment cards (Luhn-valid test numbers), with and without separators
    ("CARD", "visa 4111 1111 1111 1111 exp 12/27", "4111 1111 1111 1111"),
    ("CARD", "card: 4111-1111-1111-1111", "4111-1111-1111-1111"),
    ("CARD", "pan=4111111111111111;", "4111111111111111"),
    ("CARD", "amex 3782 822463 10005", "3782 822463 10005"),
    ("CARD", "mastercard 5555555555554444", "5555555555554444"),
    ("CARD", "discover 6011 1111 1111 1117", "6011 1111 1111 1117"),
    ("CARD", "mc 2223 0031 2200 3222", "2223 0031 2200 3222"),
    # US SSN
    ("SSN", "SSN 078-05-1120 on file", "078-05-1120"),
    ("SSN", "ssn: 123-45-6789", "123-45-6789"),
    ("SSN", "social security number 123 45 6789", "123 45 6789"),
    ("SSN", "SSN: 123456789", "123456789"),
    # IBAN (mod-97 valid)
    ("IBAN", "IBAN DE89 3704 0044 0532 0130 00 please", "3704 0044 0532 0130"),
    ("IBAN", "GB29NWBK60161331926819", "GB29NWBK60161331926819"),
    ("IBAN", "iban: FR14 2004 1010 0505 0001 3M02 606", "2004 1010 0505"),
    ("IBAN", "pay to NL91ABNA0417164300.", "NL91ABNA0417164300"),
    # IP addresses
    ("IP", "client 192.168.1.10 connected", "192.168.1.10"),
    ("IP", "from 203.0.113.42:8080", "203.0.113.42"),
    ("IP", "peer 2001:db8::1 joined", "2001:db8::1"),
    ("IP", "link fe80::1ff:fe23:4567:890a", "fe80::1ff:fe23:4567:890a"),
    ("IP", "2001:0db8:85a3:0000:0000:8a2e:0370:7334", "2001:0db8:85a3"),
    ("IP", "mapped ::ffff:192.0.2.128", "192.0.2.128"),
    # JWT
    (
        "JWT",
        "token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ),
    # PEM private keys (also JSON-escaped and truncated)
    (
        "PRIVATE_KEY",
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
        "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
        "-----END RSA PRIVATE KEY-----\nthanks",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    ),
    (
        "PRIVATE_KEY",
        '{"key": "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ'
        '\\n-----END OPENSSH PRIVATE KEY-----"}',
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    ),
    (
        "PRIVATE_KEY",
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
    ),
    # bearer / basic values
    (
        "AUTH",
        "Authorization: Bearer 8f14e45fceea167a5a36dedd4bea2543",
        "8f14e45fceea167a5a36dedd4bea2543",
    ),
    ("AUTH", "curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='", "dXNlcjpwYXNzd29yZA=="),
    ("AUTH", "use bearer abc.def.ghi123 for the call", "abc.def.ghi123"),
    # auth schemes are case-insensitive (RFC 9110), and a value without digits passes no digit gate
    ("AUTH", "send BeArEr abcdefgh12345678", "abcdefgh12345678"),
    ("AUTH", "BaSiC dXNlcjpwYXNz", "dXNlcjpwYXNz"),
    # URLs with credentials (scheme and host stay)
    ("URL_CREDENTIALS", "DSN postgres://app:s3cr3t@db.internal:5432/orders", "app:s3cr3t"),
    ("URL_CREDENTIALS", "https://user:p%40ss@example.com/x", "user:p%40ss"),
    ("URL_CREDENTIALS", "redis://:hunter2@cache:6379/0", "hunter2"),
    # provider and cloud keys
    (
        "API_KEY",
        "OPENAI_API_KEY sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbCdEf",
        "4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbCdEf",
    ),
    (
        "API_KEY",
        "legacy sk-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbCdEfGhIj",
        "4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbCdEfGhIj",
    ),
    (
        "API_KEY",
        "claude sk-ant-api03-AbCdEf0123456789AbCdEf0123456789-xyzAA",
        "AbCdEf0123456789AbCdEf0123456789",
    ),
    ("API_KEY", "aws AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("API_KEY", "session ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A"),
    (
        "API_KEY",
        "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "API_KEY",
        "maps AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    ),
    (
        "API_KEY",
        "gh ghp_1234567890abcdefghijklmnopqrstuvwxyz",
        "ghp_1234567890abcdefghijklmnopqrstuvwxyz",
    ),
    (
        "API_KEY",
        "oauth gho_16C7e42F292c6912E7710c838347Ae178B4a",
        "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "API_KEY",
        "app ghs_16C7e42F292c6912E7710c838347Ae178B4a",
        "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    (
        "API_KEY",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRS",
        "abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    ("API_KEY", "gitlab glpat-AbCdEf0123456789xYz12", "glpat-AbCdEf0123456789xYz12"),
    (
        "API_KEY",
        "slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    ("API_KEY", "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("API_KEY", "stripe rk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("API_KEY", "stripe pk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    (
        "API_KEY",
        "hub hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    ),
    (
        "API_KEY",
        "npm npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    ),
    (
        "API_KEY",
        "pypi-AgEIcHlwaS5vcmcCJGE1YjE2ZjYxLTk2ODMtNGI0Yi1hMTI3LTM2YjQ4NmZkNWM2NQ",
        "CJGE1YjE2ZjYxLTk2ODMtNGI0Yi1hMTI3LTM2YjQ4NmZkNWM2NQ",
    ),
    # credential-named assignments in free text
    ("SECRET", "password=hunter2", "hunter2"),
    ("SECRET", "PASSWORD: hunter2", "hunter2"),
    ("SECRET", "db_password = 'correct horse battery'", "correct horse battery"),
    ("SECRET", '{"client_secret": "abc123", "n": 1}', "abc123"),
    ("SECRET", "X-Api-Key: 12345abcde", "12345abcde"),
    ("SECRET", "run --token=abc123 --verbose", "abc123"),
    ("SECRET", "export GITHUB_TOKEN=abc123", "abc123"),
    ("SECRET", "Cookie: sessionid=abc123; csrftoken=xyz789", "csrftoken=xyz789"),
    ("SECRET", "Set-Cookie: sid=abc; Path=/; HttpOnly", "sid=abc"),
    ("SECRET", 'args: {\\"password\\": \\"hunter2\\"}', "hunter2"),
    ("SECRET", "?access_token=abc123&page=2", "abc123"),
    ("SECRET", "apiKey: 'k-123'", "k-123"),
    ("SECRET", "spring.datasource.password=s3cret", "s3cret"),
    ("SECRET", 'cut off {"password": "hunter2', "hunter2"),
]

# Must pass through unchanged.
NEGATIVE: list[str] = [
    "Total: $1,299.99 (15% off) for 3 items, 10,000 rows, 3.5 seconds",
    "shipped on 2024-05-01 at 12:34:56, rolled back at 13:02 (2024-05-01T12:34:56Z)",
    "version 1.2.3.4, v2.10.1, 10.0.19041.1 and Python 3.11.7",
    "std::vector<int> v; std::map<std::string, int> m; a[1::2]",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "sha e83c5163316f89bfbde7d9ab23ca2e25604af290, short 9fceb02, md5 d41d8cd98f00b204e9800998ecf8427e",
    "order #48213, order ORD-2024-000123, invoice 2024/000123",
    "ISBN 978-3-16-148410-0 and 978-0-306-40615-7",
    "local 555-0134, invalid area 123-456-7890, 000-000-0000",
    "Luhn-invalid 4111 1111 1111 1112 and 1234 5678 9012 3456",
    "bad check digits DE89 3704 0044 0532 0130 01",
    "not addresses 999.1.1.1 and 256.256.256.256 and 01.02.03.04",
    "ratio 16:9, 1:1, MAC 00:1A:2B:3C:4D:5E, 12:34:56.789",
    "unix time 1714560000, epoch ms 1714560000123, pi 3.14159265358979",
    "never issued SSNs 000-12-3456 666-12-3456 912-12-3456 123-00-4567 123-45-0000",
    "The token limit is 4096 tokens; pass the salt; a key takeaway: keep it short.",
    "password reset link sent; the secret to good prose is revision.",
    "Bearer of bad news; basic information about the plan",
    "user@localhost, @decorator and @user, git@github.com:org/repo.git",
    "see https://example.com/path?q=1 and https://user@example.com/",
    "task-force-planning-and-review-document-2024, risk-free-evaluation-for-the-quarter-2",
    "max_tokens=1024, temperature=0.7, top_p=1",
    "x = y == z; if a != b: pass",
    "HTTP/1.1 200 OK, 3 + 4 = 7, +2 points",
    "phone numbers like 12345 or 1-2-3 are not phones",
    "eyJ is how base64 JSON starts, eyJhbGciOiJIUzI1NiJ9 alone is not a JWT",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUB\n-----END CERTIFICATE-----",
    '{"token_type": "Bearer", "expires_in": 3600, "eos_token": "</s>"}',
    "<EMAIL> and <PHONE> and <SECRET> are placeholders",
    "",
]
