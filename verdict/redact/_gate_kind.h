/* The gate's scan for one string kind: included by _gate.c once per kind with CHAR (Py_UCS1,
 * Py_UCS2, Py_UCS4) and KIND(name) (a suffix for the function names) defined, as CPython's
 * stringlib does. Most characters (letters, spaces, anything non-ASCII) are skipped after one
 * table lookup; the few that can end or anchor what a family finds look at their neighbours. */

/* p[i - len + 1 .. i] == lit (ASCII) */
static inline int
KIND(ends_with)(const CHAR *p, Py_ssize_t i, const char *lit, Py_ssize_t len)
{
    if (i + 1 < len) return 0;
    for (Py_ssize_t k = 0; k < len; k++) {
        if (p[i - len + 1 + k] != (unsigned char)lit[k]) return 0;
    }
    return 1;
}

/* p[i .. i + len - 1] == lit (ASCII) */
static inline int
KIND(starts_with)(const CHAR *p, Py_ssize_t n, Py_ssize_t i, const char *lit, Py_ssize_t len)
{
    if (n - i < len) return 0;
    for (Py_ssize_t k = 0; k < len; k++) {
        if (p[i + k] != (unsigned char)lit[k]) return 0;
    }
    return 1;
}

/* p[i .. i + len - 1] is `lit` (lower-case ASCII) in any case, as keys._auth matches its
 * schemes (auth_fold) */
static inline int
KIND(folds_to)(const CHAR *p, Py_ssize_t n, Py_ssize_t i, const char *lit, Py_ssize_t len)
{
    if (n - i < len) return 0;
    for (Py_ssize_t k = 0; k < len; k++) {
        if (auth_fold(p[i + k]) != (unsigned char)lit[k]) return 0;
    }
    return 1;
}

/* Whether the name p[start .. end] holds a credential hint once lower-cased and stripped of
 * `-_.` (is_credential_name's normal form: every credential name holds one of
 * credentials._HINTS). Any name the reader can take before the separator is a suffix of it,
 * and holds a hint only if the whole run does. */
static inline int
KIND(name_has_hint)(const CHAR *p, Py_ssize_t start, Py_ssize_t end)
{
    uint64_t norm = 0;
    for (Py_ssize_t k = start; k <= end; k++) {
        unsigned c = (unsigned)p[k];  /* a name character: ASCII */
        if (CLASS[c] & C_STRIP) continue;
        if (CLASS[c] & C_UPPER) c += 32;
        norm = (norm << 8) | c;
        if (ends_with_hint(norm, c)) return 1;
    }
    return 0;
}

static long
KIND(scan)(const CHAR *p, Py_ssize_t n)
{
    long bits = 0;
    Py_ssize_t last_digit = -1;   /* the digit seen last */
    Py_ssize_t first_digit = -1;  /* the first digit of its number run */
    Py_ssize_t dots = 0;          /* dots between the digits of that run */
    Py_ssize_t colons = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = p[i];
        if (c >= 128 || !(CLASS[c] & C_TRIGGER)) continue;
        Py_UCS4 p1 = i ? p[i - 1] : 0;
        if (CLASS[c] & C_DIGIT) {
            /* numbers (numbers._classify_run finds nothing in a run shorter than 9 characters
             * with no "+" lead and fewer than three dots; _CANDIDATE's runs are digits joined by
             * "() .-/"): a run of 9+ characters from a digit to a digit, three dots between
             * the digits of a run, a "+" right before 1-9 (an international number has 8+
             * digits, its run may be shorter; "+(" or "+0" leads match no shape), an IBAN's
             * country code and check digits */
            int same_run = 0;
            if (last_digit >= 0) {
                Py_ssize_t j = i - 1, between = 0;
                while (j > last_digit && p[j] < 128 && (CLASS[p[j]] & (C_RUN | C_DOT))) {
                    between += p[j] == '.';
                    j--;
                }
                if (j == last_digit) {
                    same_run = 1;
                    dots += between;
                }
            }
            if (!same_run) {
                first_digit = i;
                dots = 0;
            } else if (i - first_digit >= 8 || dots >= 3) {
                bits |= NUMBERS;
            }
            last_digit = i;
            if ((p1 == '+' && c != '0')
                || (i >= 3 && p1 < 128 && (CLASS[p1] & C_DIGIT) && p[i - 2] < 128 && (CLASS[p[i - 2]] & C_UPPER)
                    && p[i - 3] < 128 && (CLASS[p[i - 3]] & C_UPPER))) {
                bits |= NUMBERS;
            }
            continue;
        }
        switch (c) {
        case ':':
            colons++;
            if (p1 == ':' || colons >= 7) bits |= IPV6;  /* network.scan_ipv6's own test */
            /* fall through */
        case '=': {
            /* assignments: assignments._name_before reads back over spaces, a quote (maybe
             * escaped) and a name; the value is assigned only if that name is a credential
             * name. Quotes, backslashes, spaces and tabs in any order: a superset. */
            Py_ssize_t j = i - 1;
            while (j >= 0 && p[j] < 128 && (CLASS[p[j]] & C_QUOTE)) j--;
            Py_ssize_t end = j;
            while (j >= 0 && p[j] < 128 && (CLASS[p[j]] & C_NAME)) j--;
            if (j < end && KIND(name_has_hint)(p, j + 1, end)) bits |= ASSIGNMENTS;
            break;
        }
        case '@':
            bits |= AT;  /* e-mails and URL credentials */
            break;
        /* keys: the literal each of keys.scan_keys' shapes contains (its _DASH_PREFIXES,
         * "-----BEGIN ", _A_PREFIXES, _UNDERSCORE_PREFIXES, "eyJ") and its auth schemes */
        case '-':
            if (KIND(ends_with)(p, i, "sk-", 3) || KIND(ends_with)(p, i, "glpat-", 6)
                || KIND(ends_with)(p, i, "pypi-", 5)
                || (i >= 4 && p1 < 128 && p1 && strchr("abposr", (int)p1) && KIND(ends_with)(p, i - 2, "xox", 3))
                || KIND(starts_with)(p, n, i, "-----BEGIN ", 11)) {
                bits |= KEYS;
            }
            break;
        case '_':
            if (p1 == 'k' || KIND(ends_with)(p, i, "hf_", 3) || KIND(ends_with)(p, i, "npm_", 4)
                || KIND(ends_with)(p, i, "github_", 7)
                || (i >= 3 && p1 < 128 && p1 && strchr("pousr", (int)p1) && KIND(ends_with)(p, i - 2, "gh", 2))) {
                bits |= KEYS;
            }
            break;
        case 'K':
        case 'S':
            if (p1 == 'A' && KIND(starts_with)(p, n, i + 1, "IA", 2)) bits |= KEYS;  /* AKIA, ASIA */
            break;
        case 'z':
            if (KIND(ends_with)(p, i, "AIz", 3) && KIND(starts_with)(p, n, i + 1, "a", 1)) bits |= KEYS;
            break;
        case 'J':
            if (KIND(ends_with)(p, i, "eyJ", 3)) bits |= KEYS;
            break;
        case 'b':
        case 'B':
            if (KIND(folds_to)(p, n, i + 1, "earer", 5) || KIND(folds_to)(p, n, i + 1, "asic", 4)) bits |= KEYS;
            break;
        default:
            break;
        }
    }
    return bits;
}
