"""Instruction following (QuRating Figure 3, DataMan Figure 2): an instruction set, supervised
fine-tuning of pretrained variants, answers to held-out instructions, pairwise judgments of the
answers and win rates against a reference variant. See docs/instruct.md."""
