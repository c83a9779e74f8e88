"""Unicode property names and values as ECMA-262 `\\p{…}` accepts them, and what each means to
RE2, the engine that runs callgate's patterns.

ECMA-262 takes exactly the names and aliases of Unicode's PropertyValueAliases (case
matters): a General_Category value alone or as `General_Category=`/`gc=`, a script as
`Script=`/`sc=` (its long name or four-letter code), or a binary property alone. RE2 knows the
categories by their short names and the scripts by their long names; what it lacks (the
Cased_Letter and Unassigned categories, Other with the unassigned code points in it, a few
binary properties whose sets are fixed) is written here as classes of those. Script_Extensions
and the other binary properties have no RE2 form: `gateway.tools.patterns` refuses them.
"""

from __future__ import annotations

from typing import Final, NamedTuple


class CodeSet(NamedTuple):
    """A set of code points as the members of an RE2 character class (`items`), or as
    everything outside them (`outside`)."""

    items: str
    outside: bool = False


# every code point has exactly one General_Category; RE2's C is Cc, Cf, Co and Cs (no Cn)
_ASSIGNED = r"\p{L}\p{M}\p{N}\p{P}\p{S}\p{Z}\p{C}"
_CATEGORY: Final = {
    short: CodeSet(rf"\p{{{short}}}")
    for short in (
        "L Ll Lm Lo Lt Lu M Mc Me Mn N Nd Nl No P Pc Pd Pe Pf Pi Po Ps S Sc Sk Sm So Z Zl Zp Zs "
        "Cc Cf Co Cs"
    ).split()
}
_CATEGORY["LC"] = CodeSet(r"\p{Lu}\p{Ll}\p{Lt}")
_CATEGORY["Cn"] = CodeSet(_ASSIGNED, outside=True)
_CATEGORY["C"] = CodeSet(r"\p{L}\p{M}\p{N}\p{P}\p{S}\p{Z}", outside=True)

# General_Category values: long names and the other aliases, to the short name
_CATEGORY_ALIASES: Final = {
    "Other": "C",
    "Control": "Cc",
    "cntrl": "Cc",
    "Format": "Cf",
    "Unassigned": "Cn",
    "Private_Use": "Co",
    "Surrogate": "Cs",
    "Letter": "L",
    "Cased_Letter": "LC",
    "Lowercase_Letter": "Ll",
    "Modifier_Letter": "Lm",
    "Other_Letter": "Lo",
    "Titlecase_Letter": "Lt",
    "Uppercase_Letter": "Lu",
    "Mark": "M",
    "Combining_Mark": "M",
    "Spacing_Mark": "Mc",
    "Enclosing_Mark": "Me",
    "Nonspacing_Mark": "Mn",
    "Number": "N",
    "Decimal_Number": "Nd",
    "digit": "Nd",
    "Letter_Number": "Nl",
    "Other_Number": "No",
    "Punctuation": "P",
    "punct": "P",
    "Connector_Punctuation": "Pc",
    "Dash_Punctuation": "Pd",
    "Close_Punctuation": "Pe",
    "Final_Punctuation": "Pf",
    "Initial_Punctuation": "Pi",
    "Other_Punctuation": "Po",
    "Open_Punctuation": "Ps",
    "Symbol": "S",
    "Currency_Symbol": "Sc",
    "Modifier_Symbol": "Sk",
    "Math_Symbol": "Sm",
    "Other_Symbol": "So",
    "Separator": "Z",
    "Line_Separator": "Zl",
    "Paragraph_Separator": "Zp",
    "Space_Separator": "Zs",
}

# binary properties whose sets Unicode keeps fixed (or that are defined by the categories)
_WHITE_SPACE = (
    r"\x{9}-\x{D}\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}"
    r"\x{202F}\x{205F}\x{3000}"
)
_BINARY: Final = {
    "Any": CodeSet(r"\x{0}-\x{10FFFF}"),
    "ASCII": CodeSet(r"\x{0}-\x{7F}"),
    "Assigned": CodeSet(_ASSIGNED),
    "ASCII_Hex_Digit": CodeSet("0-9A-Fa-f"),
    "Hex_Digit": CodeSet(r"0-9A-Fa-f\x{FF10}-\x{FF19}\x{FF21}-\x{FF26}\x{FF41}-\x{FF46}"),
    "White_Space": CodeSet(_WHITE_SPACE),
    "Pattern_White_Space": CodeSet(r"\x{9}-\x{D}\x{20}\x{85}\x{200E}\x{200F}\x{2028}\x{2029}"),
    "Join_Control": CodeSet(r"\x{200C}\x{200D}"),
    "Regional_Indicator": CodeSet(r"\x{1F1E6}-\x{1F1FF}"),
    "Noncharacter_Code_Point": CodeSet(
        r"\x{FDD0}-\x{FDEF}"
        + "".join(
            rf"\x{{{plane:X}FFFE}}\x{{{plane:X}FFFF}}" if plane else r"\x{FFFE}\x{FFFF}"
            for plane in range(17)
        )
    ),
}
_BINARY_ALIASES: Final = {
    "AHex": "ASCII_Hex_Digit",
    "Hex": "Hex_Digit",
    "space": "White_Space",
    "Pat_WS": "Pattern_White_Space",
    "Join_C": "Join_Control",
    "RI": "Regional_Indicator",
    "NChar": "Noncharacter_Code_Point",
}

# the other binary properties ECMA-262 names (with their aliases): valid, but not expressible
UNSUPPORTED_BINARY: Final = frozenset(
    (
        "Alphabetic Alpha Bidi_Control Bidi_C Bidi_Mirrored Bidi_M Case_Ignorable CI Cased "
        "Changes_When_Casefolded CWCF Changes_When_Casemapped CWCM Changes_When_Lowercased CWL "
        "Changes_When_NFKC_Casefolded CWKCF Changes_When_Titlecased CWT Changes_When_Uppercased "
        "CWU Dash Default_Ignorable_Code_Point DI Deprecated Dep Diacritic Dia Emoji "
        "Emoji_Component EComp Emoji_Modifier EMod Emoji_Modifier_Base EBase Emoji_Presentation "
        "EPres Extended_Pictographic ExtPict Extender Ext Grapheme_Base Gr_Base Grapheme_Extend "
        "Gr_Ext IDS_Binary_Operator IDSB IDS_Trinary_Operator IDST ID_Continue IDC ID_Start IDS "
        "Ideographic Ideo Logical_Order_Exception LOE Lowercase Lower Math Pattern_Syntax Pat_Syn "
        "Quotation_Mark QMark Radical Sentence_Terminal STerm Soft_Dotted SD Terminal_Punctuation "
        "Term Unified_Ideograph UIdeo Uppercase Upper Variation_Selector VS XID_Continue XIDC "
        "XID_Start XIDS"
    ).split()
)

# ISO 15924 codes of the scripts, to the long names RE2 knows them by (Unicode 15)
SCRIPT_CODES: Final = dict(
    pair.split("=")
    for pair in (
        "Adlm=Adlam Aghb=Caucasian_Albanian Ahom=Ahom Arab=Arabic Armi=Imperial_Aramaic "
        "Armn=Armenian Avst=Avestan Bali=Balinese Bamu=Bamum Bass=Bassa_Vah Batk=Batak "
        "Beng=Bengali Bhks=Bhaiksuki Bopo=Bopomofo Brah=Brahmi Brai=Braille Bugi=Buginese "
        "Buhd=Buhid Cakm=Chakma Cans=Canadian_Aboriginal Cari=Carian Cham=Cham Cher=Cherokee "
        "Chrs=Chorasmian Copt=Coptic Qaac=Coptic Cpmn=Cypro_Minoan Cprt=Cypriot Cyrl=Cyrillic "
        "Deva=Devanagari Diak=Dives_Akuru Dogr=Dogra Dsrt=Deseret Dupl=Duployan "
        "Egyp=Egyptian_Hieroglyphs Elba=Elbasan Elym=Elymaic Ethi=Ethiopic Geor=Georgian "
        "Glag=Glagolitic Gong=Gunjala_Gondi Gonm=Masaram_Gondi Goth=Gothic Gran=Grantha "
        "Grek=Greek Gujr=Gujarati Guru=Gurmukhi Hang=Hangul Hani=Han Hano=Hanunoo Hatr=Hatran "
        "Hebr=Hebrew Hira=Hiragana Hluw=Anatolian_Hieroglyphs Hmng=Pahawh_Hmong "
        "Hmnp=Nyiakeng_Puachue_Hmong Hung=Old_Hungarian Ital=Old_Italic Java=Javanese "
        "Kali=Kayah_Li Kana=Katakana Kawi=Kawi Khar=Kharoshthi Khmr=Khmer Khoj=Khojki "
        "Kits=Khitan_Small_Script Knda=Kannada Kthi=Kaithi Lana=Tai_Tham Laoo=Lao Latn=Latin "
        "Lepc=Lepcha Limb=Limbu Lina=Linear_A Linb=Linear_B Lisu=Lisu Lyci=Lycian Lydi=Lydian "
        "Mahj=Mahajani Maka=Makasar Mand=Mandaic Mani=Manichaean Marc=Marchen Medf=Medefaidrin "
        "Mend=Mende_Kikakui Merc=Meroitic_Cursive Mero=Meroitic_Hieroglyphs Mlym=Malayalam "
        "Modi=Modi Mong=Mongolian Mroo=Mro Mtei=Meetei_Mayek Mult=Multani Mymr=Myanmar "
        "Nagm=Nag_Mundari Nand=Nandinagari Narb=Old_North_Arabian Nbat=Nabataean Newa=Newa "
        "Nkoo=Nko Nshu=Nushu Ogam=Ogham Olck=Ol_Chiki Orkh=Old_Turkic Orya=Oriya Osge=Osage "
        "Osma=Osmanya Ougr=Old_Uyghur Palm=Palmyrene Pauc=Pau_Cin_Hau Perm=Old_Permic "
        "Phag=Phags_Pa Phli=Inscriptional_Pahlavi Phlp=Psalter_Pahlavi Phnx=Phoenician "
        "Plrd=Miao Prti=Inscriptional_Parthian Rjng=Rejang Rohg=Hanifi_Rohingya Runr=Runic "
        "Samr=Samaritan Sarb=Old_South_Arabian Saur=Saurashtra Sgnw=SignWriting Shaw=Shavian "
        "Shrd=Sharada Sidd=Siddham Sind=Khudawadi Sinh=Sinhala Sogd=Sogdian Sogo=Old_Sogdian "
        "Sora=Sora_Sompeng Soyo=Soyombo Sund=Sundanese Sylo=Syloti_Nagri Syrc=Syriac "
        "Tagb=Tagbanwa Takr=Takri Tale=Tai_Le Talu=New_Tai_Lue Taml=Tamil Tang=Tangut "
        "Tavt=Tai_Viet Telu=Telugu Tfng=Tifinagh Tglg=Tagalog Thaa=Thaana Thai=Thai "
        "Tibt=Tibetan Tirh=Tirhuta Tnsa=Tangsa Toto=Toto Ugar=Ugaritic Vaii=Vai "
        "Vith=Vithkuqi Wara=Warang_Citi Wcho=Wancho Xpeo=Old_Persian Xsux=Cuneiform "
        "Yezi=Yezidi Yiii=Yi Zanb=Zanabazar_Square Zinh=Inherited Qaai=Inherited "
        "Zyyy=Common"
    ).split()
)


def category(value: str) -> CodeSet | None:
    """The General_Category value or alias `value`, or None."""
    return _CATEGORY.get(_CATEGORY_ALIASES.get(value, value))


def binary(name: str) -> CodeSet | None:
    """The binary property `name` (or alias) when RE2 can express it, else None."""
    return _BINARY.get(_BINARY_ALIASES.get(name, name))


def is_binary(name: str) -> bool:
    return binary(name) is not None or name in UNSUPPORTED_BINARY
