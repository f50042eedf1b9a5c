#!/bin/bash
# A ported model's 8p launch script as ModelZoo writes them (test/train_full_8p.sh of the model's folder): its own
# rank table naming an NPU server, a loop that starts one background training process per rank, then `wait`.
cur_path=`pwd`
export RANK_SIZE=8
export RANK_TABLE_FILE=${cur_path}/../configs/8p.json
export JOB_ID=10087
RANK_ID_START=0
model_dir=""
for para in $*
do
    if [[ $para == --model_dir* ]];then
        model_dir=`echo ${para#*=}`
    fi
done
for((RANK_ID=$RANK_ID_START;RANK_ID<$((RANK_SIZE+RANK_ID_START));RANK_ID++));
do
    export RANK_ID=$RANK_ID
    export ASCEND_DEVICE_ID=$RANK_ID
    export DEVICE_ID=$RANK_ID
    mkdir -p ${cur_path}/output/${ASCEND_DEVICE_ID}
    nohup python3.7 ${cur_path}/../dist_session_port.py ${model_dir} > ${cur_path}/output/${ASCEND_DEVICE_ID}/train_${ASCEND_DEVICE_ID}.log 2>&1 &
done
wait
echo "E2E Training Duration sec : done"
