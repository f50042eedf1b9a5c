"""The value grammars of options-spec §1j, case by case."""

import json
import re

import pytest

from npu_bridge_compat.errors import UnknownOptionWarning
from npu_bridge_compat.options import grammars as g


@pytest.mark.parametrize(
    "text, steps",
    [
        ("0|5|10", ((0, 0), (5, 5), (10, 10))),
        ("0|3-5|10", ((0, 0), (3, 5), (10, 10))),
        ("0|5|10|50-100|", ((0, 0), (5, 5), (10, 10), (50, 100))),
        ("-3", ((0, 3),)),
    ],
)
def test_dump_step_accepts_the_adapter_forms(text, steps):
    assert g.DumpSteps().parse(text) == steps


@pytest.mark.parametrize(
    "text, message",
    [
        ("0|x", "dump_step string style is error, correct example:'0|5|10|50-100'"),
        ("0||5", "dump_step string style is error"),
        ("5-3", "in range steps, the first step is >= second step (5-3)"),
        ("4-4", "in range steps, the first step is >= second step"),
        ("|".join(map(str, range(101))), "dump_step only support dump <= 100 sets of data"),
    ],
)
def test_dump_step_rejects_with_the_adapter_wording(text, message):
    with pytest.raises(g.GrammarError) as error:
        g.DumpSteps().parse(text)
    assert message in str(error.value)


def test_in_out_pair_reads_python_str_of_a_list_as_the_adapter_does():
    in_nodes = ["_arg_tf_image_string_0_0", "strided_slice_1/stack", "Const"]
    out_nodes = ["strided_slice_2", "strided_slice_3"]
    pairs = g.InOutPairs().parse(str([[in_nodes, out_nodes]]))
    assert pairs == (g.InOutPair(tuple(in_nodes), tuple(out_nodes)),)
    assert g.InOutPairs().parse("[[[a, b],[c]], [[d],[e]]]")[1] == g.InOutPair(("d",), ("e",))


def test_in_out_pair_keeps_double_quotes_like_the_adapter():
    (pair,) = g.InOutPairs().parse('[[["a"], ["b"]]]')
    assert pair.inputs == ('"a"',)


@pytest.mark.parametrize("text", ["", "[]", "[[a]", "[[['a']]]", "[[[], ['b']]]", "a,b", "[[['a'], ['b']]]]"])
def test_in_out_pair_rejects_malformed_text(text):
    with pytest.raises(g.GrammarError, match="in_out_pair: .* is invalid"):
        g.InOutPairs().parse(text)


def test_input_shape_and_dynamic_dims():
    assert g.InputShape().parse("data:1,1,40,-1;label:1,-1") == (("data", (1, 1, 40, -1)), ("label", (1, -1)))
    assert g.DynamicDims().parse("20,20,1,1;40,40,2,2") == ((20, 20, 1, 1), (40, 40, 2, 2))
    with pytest.raises(g.GrammarError, match="input_shape is empty."):
        g.InputShape().parse("")
    with pytest.raises(g.GrammarError, match="input_shape string style is invalid"):
        g.InputShape().parse("data:1,,2")
    with pytest.raises(g.GrammarError, match="dynamic_dims string style is invalid"):
        g.DynamicDims().parse("20;-1")


def test_shape_ranges_from_the_ascend_docs():
    ranges = g.ShapeRanges().parse("getnext:[128 ,3~5, 2~128, -1],[64 ,3~5, 2~128, -1];data:[128 ,3~5, 2~128, -1]")
    assert ranges["getnext"] == ((128, (3, 5), (2, 128), -1), (64, (3, 5), (2, 128), -1))
    assert g.ShapeRanges().parse("data:[]") == {"data": ((),)}


@pytest.mark.parametrize(
    "text, message",
    [
        ("data:[1];getnext:[2];data:[3]", "more than 2 input styles"),
        ("other:[1]", re.escape("example:'data:[1,2];getnext:[2,3]'")),
        ("data:[1,x]", "style is invalid"),
        ("data:[1]:[2]", "style is invalid"),
        ("data:[1];data:[2]", "style is invalid"),
    ],
)
def test_shape_ranges_reject(text, message):
    with pytest.raises(g.GrammarError, match=message):
        g.ShapeRanges().parse(text)


SEED_004_MIXLIST = """{
  "black-list": {                  // 黑名单
     "to-remove": [                // 黑名单算子转换为灰名单算子
     "Xlog1py"
     ],
     "to-add": [                   // 白名单或灰名单算子转换为黑名单算子
     "Matmul",
     "Cast"
     ]
  },
  "white-list": {                  // 白名单
     "to-remove": [                // 白名单算子转换为灰名单算子
     "Conv2D"
     ],
     "to-add": [                   // 黑名单或灰名单算子转换为白名单算子
     "Bias"
     ]
  }
}"""


def test_mixlist_from_the_ascend_sample_with_comments(tmp_path):
    path = tmp_path / "ops_info.json"
    path.write_text(SEED_004_MIXLIST, encoding="utf-8")
    mixlist = g.MixListFile().parse(str(path))
    assert mixlist.ops("black-list", "to-add") == ("Matmul", "Cast")
    assert mixlist.ops("black-list", "to-remove") == ("Xlog1py",)
    assert mixlist.ops("white-list", "to-add") == ("Bias",)
    assert mixlist.ops("gray-list", "to-add") == ()


def test_comment_stripping_leaves_strings_alone():
    assert json.loads(g.strip_json_comments('{"a": "http://x"} // c')) == {"a": "http://x"}


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"blacklist": {}}', "unknown list 'blacklist'.*Did you mean 'black-list'"),
        ('{"black-list": {"to_add": ["A"]}}', "unknown entry 'to_add'.*Did you mean 'to-add'"),
        ('{"black-list": {"to-add": "A"}}', "must be a list of operator type names"),
        ('{"black-list": ', "is not valid JSON"),
        ("[1]", "must hold a JSON object"),
    ],
)
def test_mixlist_errors(tmp_path, content, message):
    path = tmp_path / "ops_info.json"
    path.write_text(content)
    with pytest.raises(g.GrammarError, match=message):
        g.MixListFile().parse(str(path))


def test_mixlist_file_must_exist(tmp_path):
    with pytest.raises(g.GrammarError, match="does not exist"):
        g.MixListFile().parse(str(tmp_path / "nope.json"))


def test_fusion_switch_file_both_forms(tmp_path):
    json_form = tmp_path / "fusion_switch.cfg"
    json_form.write_text(
        '{"Switch": {"GraphFusion": {"ALL": "off", "SoftmaxFusionPass": "on"}, "UBFusion": {"ALL": "off"}}}'
    )
    assert g.FusionSwitchFile().parse(str(json_form))[("GraphFusion", "ALL")] == "off"
    lines_form = tmp_path / "switch.txt"
    lines_form.write_text("RequantFusionPass:off\nConvConcatFusionPass:on\n")
    assert g.FusionSwitchFile().parse(str(lines_form)) == {
        ("GraphFusion", "RequantFusionPass"): "off",
        ("GraphFusion", "ConvConcatFusionPass"): "on",
    }
    assert g.FusionSwitchFile().parse(str(tmp_path / "only_on_the_npu_server.cfg")) is None


def test_profiling_options_from_the_ascend_docs(tmp_path):
    text = json.dumps(
        {
            "output": str(tmp_path / "profiling"),
            "training_trace": "on",
            "fp_point": "resnet_model/conv2d/Conv2D",
            "bp_point": "gradients/AddN_70",
        }
    )
    assert g.ProfilingOptions().parse(text)["bp_point"] == "gradients/AddN_70"
    assert g.ProfilingOptions().parse("")["training_trace"] == "on"  # the adapter's default JSON


@pytest.mark.parametrize(
    "document, message",
    [
        ({"task_trace": "yes"}, "'task_trace' must be 'on' or 'off'"),
        ({"storage_limit": "10MB"}, "storage_limit"),
        ({"aic_metrics": "Everything"}, "aic_metrics"),
        ({"output": 3}, "'output' must be a string"),
    ],
)
def test_profiling_options_errors(document, message):
    with pytest.raises(g.GrammarError, match=message):
        g.ProfilingOptions().parse(json.dumps(document))


def test_profiling_output_must_be_writable(tmp_path, monkeypatch):
    # Root can write anywhere, so read-only permission is simulated where the check asks for it.
    monkeypatch.setattr(g.os, "access", lambda path, mode: False)
    with pytest.raises(g.GrammarError, match="not writable"):
        g.ProfilingOptions().parse(json.dumps({"output": str(tmp_path / "trace")}))
    with pytest.raises(g.GrammarError, match="does't have read, write permissions"):
        g.Directory().parse(str(tmp_path))


def test_profiling_output_that_is_a_file_is_rejected(tmp_path):
    file = tmp_path / "file"
    file.write_text("")
    with pytest.raises(g.GrammarError, match="is not a directory"):
        g.ProfilingOptions().parse(json.dumps({"output": str(file / "trace")}))


def test_profiling_unknown_key_warns_with_suggestion():
    with pytest.warns(UnknownOptionWarning, match="'trainig_trace'.*Did you mean 'training_trace'"):
        g.ProfilingOptions().parse('{"trainig_trace": "on"}')


def test_directory_messages(tmp_path):
    file = tmp_path / "f"
    file.write_text("")
    with pytest.raises(g.GrammarError, match="is not directory"):
        g.Directory().parse(str(file))
    with pytest.raises(g.GrammarError, match="is invalid"):
        g.Directory().parse(str(tmp_path / "missing"))


def test_byte_size_range():
    assert g.ByteSize().parse(str(256 * g.GIB)) == 256 * g.GIB
    with pytest.raises(g.GrammarError, match="256 GiB"):
        g.ByteSize().parse(str(256 * g.GIB + 1))
    with pytest.raises(g.GrammarError, match="decimal number of bytes"):
        g.ByteSize().parse("26G")


def test_paths_the_file_system_refuses_are_grammar_errors():
    too_long = "x" * 5000
    for check in (g.Directory(), g.FusionSwitchFile(), g.MixListFile()):
        with pytest.raises(g.GrammarError):
            check.parse(too_long)
    with pytest.raises(g.GrammarError, match="invalid"):
        g.ProfilingOptions().parse(json.dumps({"output": too_long}))
